"""Any file name Linux allows, made safe for each output.

kvlint holds names as `os.fsdecode` gives them: a byte that is not UTF-8
becomes a lone surrogate (`\\udcff` for byte 0xff), which no UTF-8 stream can
carry. Each format says such a name its own way:

- text (terminal, log, github): `printable` shows control characters and
  undecodable bytes as `\\xNN`, so a name cannot colour or move the terminal;
- JSON and SARIF: `json_document` writes a lone surrogate as the JSON escape
  `\\udcNN`, so the document is valid UTF-8 and decodes back (Python's
  `json.loads` then `os.fsencode`) to the exact bytes; SARIF URIs
  percent-encode the bytes (`uri_quote`);
- markdown and mermaid escape backticks and line breaks (`kvlint.report.markdown`, `kvlint.report.mermaid`).
"""

from __future__ import annotations

import os
import re
import urllib.parse

_UNPRINTABLE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\ud800-\udfff]")  # C0 but tab, DEL, C1, lone surrogates
_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte, as os.fsdecode keeps it
        code -= 0xDC00
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with control characters and undecodable bytes shown as `\\xNN` (tabs kept)."""
    return _UNPRINTABLE.sub(_escape, text) if _UNPRINTABLE.search(text) else text


def json_document(text: str) -> str:
    """A JSON document from `json.dumps(..., ensure_ascii=False)` with each lone surrogate escaped."""
    return _SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def uri_quote(path: str) -> str:
    """Percent-encode a path's bytes (as the file system has them) for a URI."""
    return urllib.parse.quote(os.fsencode(path), safe="/")


def utf8_bytes(text: str) -> bytes:
    """Bytes to hash or store: a name's undecodable bytes as they were."""
    return text.encode("utf-8", "surrogateescape")
