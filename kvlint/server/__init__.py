"""The editor face: `kvlint server`, the Language Server Protocol over stdio (docs/server.md).

It needs the `server` extra (pygls and lsprotocol); this module imports neither,
so that `kvlint server` without them says how to install them instead of failing.
"""

from __future__ import annotations

import sys

INSTALL_HINT = "pip install 'vllm-kvlint[server]'"


def main() -> int:
    """Serve LSP on stdin/stdout until the client says `exit`; 2 when the extra is missing."""
    try:
        import lsprotocol  # noqa: F401
        import pygls  # noqa: F401
    except ImportError as exc:
        missing = exc.name or "pygls"
        sys.stderr.write(  # the docs name both packages; say which one is missing and how to install both
            f"kvlint: `kvlint server` needs pygls and lsprotocol, the `server` extra ({missing} is not installed): "
            f"{INSTALL_HINT}\n"
        )
        return 2
    from kvlint.server.language_server import serve

    return serve()
