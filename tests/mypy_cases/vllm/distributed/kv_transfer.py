"""Stand-in for vllm/distributed/kv_transfer/__init__.py."""


def has_kv_transfer_group() -> bool:
    return False
