"""kvlint: static invariant checker for vLLM KV-connector outputs."""

import functools

__version__ = "0.1.0"


@functools.cache
def source_digest() -> str:
    """A digest of kvlint's own sources: caches (kvlint's, mypy's) follow engine changes, not only releases."""
    import hashlib
    from pathlib import Path

    digest = hashlib.sha256()
    for source in sorted(Path(__file__).parent.rglob("*.py")):
        digest.update(source.as_posix().encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()[:16]
