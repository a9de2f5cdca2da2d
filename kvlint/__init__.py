"""kvlint: static invariant checker for vLLM KV-connector outputs."""

import functools

__version__ = "0.1.0"


def run() -> None:
    """The `kvlint` command and `python -m kvlint`: `kvlint.cli.main`, and a Ctrl-C that comes while the command
    line's modules load ends as one during a run does (one line, status 130), not with a traceback."""
    import sys

    try:
        from kvlint.cli import main
    except KeyboardInterrupt:
        sys.stderr.write("kvlint: interrupted\n")
        raise SystemExit(130) from None
    status = main()
    try:  # the report is out: end without freeing what the run built, as mypy ends (10 ms after a tree's audit)
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):  # a stream that cannot take it (a closed pipe): Python's own exit says what
        raise SystemExit(status) from None
    import os

    os._exit(status)


@functools.cache
def source_digest() -> str:
    """A digest of kvlint's own sources: caches (kvlint's, mypy's) follow engine changes, not only releases."""
    import hashlib
    from pathlib import Path

    digest = hashlib.sha256()
    for source in sorted(Path(__file__).parent.rglob("*.py")):
        digest.update(source.as_posix().encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()[:16]
