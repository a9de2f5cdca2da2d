"""`kvlint server`: the language server over stdio (`kvlint.server`, which needs the `server` extra)."""

from __future__ import annotations


def serve() -> int:
    """Serve an editor until it disconnects; return the exit status."""
    from kvlint.server import main as serve

    return serve()
