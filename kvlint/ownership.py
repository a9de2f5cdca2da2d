"""Whose directory is this? The configuration search stops where someone else could have put a file.

A `pyproject.toml` in a parent directory decides what kvlint checks (an
`exclude = ["*.py"]` there turns a run into a silent pass), so, like git's
`safe.directory`, the search for one trusts only directories and files owned
by the current user, by root, or by the owner of the directory it started in
(root checking a user's checkout in a container). Above the first directory
owned by anyone else it does not look.
"""

from __future__ import annotations

import os
from pathlib import Path


def trusted_owners(start: str) -> frozenset[int]:
    """The users whose directories and files the search from `start` may read."""
    owners = {os.geteuid(), 0}
    try:
        owners.add(os.stat(start).st_uid)
    except OSError:
        pass
    return frozenset(owners)


def foreign_owner(path: str | Path, trusted: frozenset[int]) -> int | None:
    """The owner of `path` when it is not a trusted one, else None (also when it cannot be looked at)."""
    try:
        owner = os.stat(path).st_uid
    except OSError:
        return None
    return None if owner in trusted else owner


def search_stop(start: Path) -> tuple[str, int] | None:
    """The first directory at or above `start` owned by someone untrusted, and its owner; None if none is."""
    current = os.path.abspath(start)
    if not os.path.isdir(current):
        current = os.path.dirname(current)
    trusted = trusted_owners(current)
    while True:
        owner = foreign_owner(current, trusted)
        if owner is not None:
            return current, owner
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent
