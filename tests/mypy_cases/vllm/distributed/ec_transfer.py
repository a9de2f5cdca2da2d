"""Stand-in for vllm/distributed/ec_transfer (the encoder-cache connector's guard)."""


def has_ec_transfer() -> bool:
    return False
