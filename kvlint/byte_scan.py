"""The byte scan: can a file concern kvlint at all? Whether its bytes mention any configured name.

Every file of a run goes through it, so it is a handful of `in` tests on the file's bytes (memchr-fast),
never a regular expression; names that share a long substring are searched for once.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable


def mentions_any(data: bytes | str, names: Iterable[str]) -> bool:
    """The byte scan: can this file concern kvlint at all?"""
    text_probes, byte_probes = _probes(tuple(names))
    probes = byte_probes if isinstance(data, bytes) else text_probes
    return any(probe in data and (not group or any(needle in data for needle in group)) for probe, group in probes)


_PROBE_LENGTH = 8  # the shortest substring shared by needles that is searched for in their place
_MAX_GROUPED = 40


Probes = tuple[tuple[str, tuple[str, ...]], ...]


@functools.lru_cache(maxsize=32)
def _probes(names: tuple[str, ...]) -> tuple[Probes, tuple[tuple[bytes, tuple[bytes, ...]], ...]]:
    """The needles, those that share a long substring searched for once: `_connector_output` stands for
    `kv_connector_output` and `ec_connector_output`, and only a file that has it is searched for them.
    Each probe is (substring, the needles it stands for); a needle that shares nothing stands for itself
    (an empty group). One `in` per probe over most files: each invariant adds few probes, not all its names."""
    groups = [(needle, (needle,)) for needle in _needles(names)[0]]
    while len(groups) <= _MAX_GROUPED:  # pairs cost quadratic time: a long list of names is searched as it is
        best = max(
            ((_common_substring(a[0], b[0]), i, j) for i, a in enumerate(groups) for j, b in enumerate(groups)
             if i < j),
            default=("", 0, 0), key=lambda item: len(item[0]),
        )
        shared, i, j = best
        if len(shared) < _PROBE_LENGTH:
            break
        merged = (shared, groups[i][1] + groups[j][1])
        groups = [group for k, group in enumerate(groups) if k not in (i, j)] + [merged]
    text = tuple((probe, members if members != (probe,) else ()) for probe, members in groups)
    return text, tuple((probe.encode(), tuple(m.encode() for m in members)) for probe, members in text)


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


@functools.lru_cache(maxsize=32)
def _needles(names: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[bytes, ...]]:
    """The names to look for, without those that contain another one: a file that
    mentions `_get_kv_connector_output` mentions `kv_connector_output` too."""
    names = tuple(dict.fromkeys(names))  # callers may repeat a name (configured and extra): once is enough
    kept = tuple(name for name in names if not _contains_another(name, frozenset(names)))
    return kept, tuple(name.encode() for name in kept)


def _contains_another(name: str, names: frozenset[str]) -> bool:
    """Whether a shorter name of `names` is part of `name`: each of its substrings is looked up, so the cost
    grows with the names' count, not its square."""
    length = len(name)
    return any(name[start:end] in names for start in range(length) for end in range(start + 1, length + 1)
               if end - start < length)
