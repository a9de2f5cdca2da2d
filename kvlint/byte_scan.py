"""The byte scan: can a file concern kvlint at all? Whether its bytes mention any configured name.

Every file of a run goes through it, so it is a handful of `in` tests on the file's bytes (memchr-fast),
never a regular expression; names that share a long substring are searched for once.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any


def mentions_any(data: bytes | str, names: Iterable[str]) -> bool:
    """The byte scan: can this file concern kvlint at all?"""
    text_probes, byte_probes = _probes(tuple(names))
    return _any_found(data, byte_probes if isinstance(data, bytes) else text_probes)


def _any_found(data: bytes | str, probes: Probes) -> bool:
    """Whether a needle under these probes is in `data`: a probe's members are searched for only where it is.
    `find`, not `in`: `needle in data` of bytes first tries the needle as an integer (a byte's value), and raises
    and clears a TypeError each time (a small file's scan took twice as long)."""
    for probe, members in probes:  # a loop, not `any` over a generator: a small file costs the calls alone
        if data.find(probe) >= 0 and (not members or _any_found(data, members)):  # type: ignore[arg-type]
            return True
    return False


def names_found(data: bytes, names: tuple[str, ...]) -> list[str]:
    """Those of `names` the bytes hold, in their order. Names that share their first bytes are looked for only
    where those are: the run's producers in a project's tests are dozens of `test_...` functions, looked for
    in each of the project's thousands of other files."""
    found: set[str] = set()
    for prefix, members in _prefix_groups(names):
        if data.find(prefix) >= 0:
            found.update(name for name, needle in members if needle == prefix or data.find(needle) >= 0)
    return [name for name in names if name in found] if found else []


_PREFIX_LENGTH = 5  # `test_`


@functools.lru_cache(maxsize=32)
def _prefix_groups(names: tuple[str, ...]) -> tuple[tuple[bytes, tuple[tuple[str, bytes], ...]], ...]:
    groups: dict[bytes, list[tuple[str, bytes]]] = {}
    for name in names:
        needle = name.encode()
        groups.setdefault(needle[:_PREFIX_LENGTH], []).append((name, needle))
    return tuple((members[0][1] if len(members) == 1 else prefix, tuple(members)) for prefix, members in groups.items())


_PROBE_LENGTH = 8  # the shortest substring shared by needles that is searched for in their place
_MAX_GROUPED = 40
_NESTING_GAIN = 4  # how much longer a group's probe must be than its parent's to be searched for on its own


Probes = tuple[tuple[Any, "Probes"], ...]  # (substring, the probes it stands for; none: it is a needle)


@functools.lru_cache(maxsize=32)
def _probes(names: tuple[str, ...]) -> tuple[Probes, Probes]:
    """The needles as a tree of probes, for text and for bytes: needles that share a long substring are
    searched for through it, and only a file that has it is searched for them. `_connector_output` stands
    for `kv_connector_output` and `ec_connector_output`, and `onnector` for it and `ConnectorOutput`: a file
    without `onnector` (most) costs one search for the four; one with it, a search per level, not one per
    needle, so that an invariant's names add few searches over the files that mention their kin."""
    nodes: list[tuple[str, Probes]] = [(needle, ()) for needle in _needles(names)[0]]
    while len(nodes) <= _MAX_GROUPED:  # pairs cost quadratic time: a long list of names is searched as it is
        shared, i, j = max(
            ((_common_substring(a[0], b[0]), i, j) for i, a in enumerate(nodes) for j, b in enumerate(nodes)
             if i < j),
            default=("", 0, 0), key=lambda item: len(item[0]),
        )
        if len(shared) < _PROBE_LENGTH:
            break
        merged = tuple(  # a group whose probe is hardly longer than the shared one joins this level, rather
            member for node in (nodes[i], nodes[j])  # than nest: a file with one mostly has the other too
            for member in (node[1] if node[1] and len(node[0]) < len(shared) + _NESTING_GAIN else (node,))
        )
        nodes = [node for k, node in enumerate(nodes) if k not in (i, j)] + [(shared, merged)]
    text = tuple(nodes)
    return text, _encoded(text)


def _encoded(probes: Probes) -> Probes:
    return tuple((probe.encode(), _encoded(members)) for probe, members in probes)


def _common_substring(a: str, b: str) -> str:
    """The longest substring of both (the first such in `a`)."""
    best = ""
    for start in range(len(a)):
        for end in range(start + len(best) + 1, len(a) + 1):
            if a[start:end] in b:
                best = a[start:end]
            else:
                break
    return best


def distinct_needles(names: Iterable[str]) -> tuple[str, ...]:
    """The names, without those that contain another one (where one is found, so is the other)."""
    return _needles(tuple(names))[0]


@functools.lru_cache(maxsize=32)
def _needles(names: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[bytes, ...]]:
    """The names to look for, without those that contain another one: a file that
    mentions `_get_kv_connector_output` mentions `kv_connector_output` too."""
    names = tuple(dict.fromkeys(names))  # callers may repeat a name (configured and extra): once is enough
    known, lengths = frozenset(names), sorted({len(name) for name in names})
    kept = tuple(name for name in names if not _contains_another(name, known, lengths))
    return kept, tuple(name.encode() for name in kept)


def _contains_another(name: str, names: frozenset[str], lengths: list[int]) -> bool:
    """Whether a shorter name of `names` is part of `name`: its substrings of the names' lengths are looked
    up, so the cost grows with the names' count, not its square."""
    return any(name[start:start + length] in names
               for length in lengths if length < len(name) for start in range(len(name) - length + 1))
