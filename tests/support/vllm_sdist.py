"""Fetch the `tests/`, `examples/`, `benchmarks/` and `tools/` of a vLLM source distribution.

`pip download` of vLLM's sdist would build it (it runs the build backend to read the
metadata), so the archive is fetched without pip: its URL comes from the simple index
(PEP 691 JSON) pip is configured with, its sha256 is checked against the index's, and
only the `.py` files of those four directories are extracted into the cache shared with
`tests/support/vllm_sources.py` (`KVLINT_TEST_CACHE`). Never committed.

Under `CI=true` a failed download fails the test; elsewhere it skips with the reason.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tarfile
import urllib.parse
import urllib.request
from pathlib import Path, PurePosixPath

from tests.support.vllm_sources import CACHE, _unavailable

DIRECTORIES = ("tests", "examples", "benchmarks", "tools")
DEFAULT_INDEX = "https://pypi.org/simple"


def index_url() -> str:
    """The index pip uses: `PIP_INDEX_URL`, else pip's configured `index-url`, else PyPI."""
    if os.environ.get("PIP_INDEX_URL"):
        return os.environ["PIP_INDEX_URL"].rstrip("/")
    try:
        listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                                timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        listed = ""
    for line in listed.splitlines():
        key, _, value = line.partition("=")
        if key.strip().endswith(".index-url"):
            return value.strip().strip("'\"").rstrip("/")
    return DEFAULT_INDEX


def sdist_location(version: str) -> tuple[str, str]:
    """The URL and sha256 of `vllm-VERSION.tar.gz`, read from the index's page for vllm."""
    page = f"{index_url()}/vllm/"
    request = urllib.request.Request(page, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        listing = json.load(response)
    wanted = f"vllm-{version}.tar.gz"
    for entry in listing.get("files", []):
        if entry.get("filename") == wanted:
            return urllib.parse.urljoin(page, entry["url"]), entry.get("hashes", {}).get("sha256", "")
    raise LookupError(f"{page} lists no {wanted}")


def _download(url: str, sha256: str, destination: Path) -> None:
    partial = destination.with_name(destination.name + f".{os.getpid()}.part")
    digest = hashlib.sha256()
    try:
        with urllib.request.urlopen(url, timeout=600) as response, open(partial, "wb") as out:
            while chunk := response.read(1 << 20):
                digest.update(chunk)
                out.write(chunk)
        if sha256 and digest.hexdigest() != sha256:
            raise OSError(f"sha256 mismatch for {url}: {digest.hexdigest()} is not {sha256}")
        os.replace(partial, destination)
    finally:
        partial.unlink(missing_ok=True)


def _wanted(name: str, version: str) -> str | None:
    """The path below the tree of an archive member to extract, or None.

    vLLM's own `pyproject.toml` comes too (it has no kvlint section): it marks the
    tree's root as in a checkout, where `test-files` globs are anchored.
    """
    parts = PurePosixPath(name).parts
    if parts == (f"vllm-{version}", "pyproject.toml"):
        return "pyproject.toml"
    if len(parts) < 3 or parts[0] != f"vllm-{version}" or parts[1] not in DIRECTORIES:
        return None
    if not name.endswith(".py") or ".." in parts or name.startswith("/"):
        return None
    return "/".join(parts[1:])


def _archive(version: str) -> Path:
    """Return vLLM VERSION's sdist archive, downloaded once into the cache."""
    archives = CACHE / "sdists" / version
    archive = archives / f"vllm-{version}.tar.gz"
    if not archive.is_file():
        archives.mkdir(parents=True, exist_ok=True)
        try:
            url, sha256 = sdist_location(version)
            _download(url, sha256, archive)
        except (OSError, LookupError, ValueError) as exc:
            _unavailable(f"cannot fetch vLLM {version}'s sdist: {exc}")
    return archive


def vllm_sdist_file(version: str, name: str) -> str:
    """Return the text of one file at the root of vLLM VERSION's sdist (`pyproject.toml`,
    `.pre-commit-config.yaml`: how vLLM wires its own checks)."""
    with tarfile.open(_archive(version), "r:gz") as tar:
        member = tar.extractfile(f"vllm-{version}/{name}")
        assert member is not None, name
        return member.read().decode("utf-8")


def vllm_sdist_tree(version: str) -> Path:
    """Return a directory holding the `.py` files of DIRECTORIES of vLLM VERSION's sdist (downloaded once)."""
    destination = CACHE / "src" / f"vllm-{version}-sdist"
    complete = destination / ".complete"
    if complete.is_file() and (destination / "pyproject.toml").is_file():
        return destination
    archive = _archive(version)
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar:
            relative = _wanted(member.name, version)
            if relative is None or not member.isfile():
                continue
            target = destination / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(member)
            assert source is not None
            target.write_bytes(source.read())
    complete.write_text(f"{archive.name}\n")
    return destination
