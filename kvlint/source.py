"""A file's text as Python reads it: decoding (BOM, coding cookie, UTF-8), the tokenizer's line splitting,
`SourceError` (KVC900's message and position), `ast` parsing with CPython's positions, and dotted module
names. Every layer reads it; of kvlint it imports only `paths`."""

from __future__ import annotations

import ast
import codecs
import re
import threading
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

from kvlint.paths import PROJECT_MARKERS

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


class SourceError(Exception):
    """The file cannot be decoded or parsed; carries a one-line message and a position."""

    def __init__(self, message: str, line: int = 1, column: int = 0):
        super().__init__(message)
        self.message = message
        self.line = max(line, 1)
        self.column = max(column, 0)


_WARNINGS_FILTER = threading.Lock()  # `catch_warnings` swaps a process-wide list: one thread at a time


PARSE_BATCH_CHARACTERS = 1 << 16  # a batch; a text over 8 batches (512 KB) is parsed a batch at a time
# a line starting a top-level `def`, `class` or decorator: where a batch may start (unless a decorator is above)
_BATCH_START = re.compile(r"(?:\r\n|\r|\n)(?=(?:async[ \t]+)?def[ \t]|class[ \t]|@)")


def parse_source(text: str) -> ast.Module:
    """`ast.parse`, its errors a `SourceError` positioned as CPython gives them."""
    try:
        module = _parsed_in_batches(text) if parses_in_batches(text) else None
        return module if module is not None else _quiet_parse(text)
    except SyntaxError as exc:
        line = exc.lineno or 1
        column = (exc.offset or 1) - 1
        raise SourceError(f"cannot parse: {exc.msg}", line, column) from None
    except (RecursionError, MemoryError):
        raise SourceError("cannot parse: too deeply nested") from None
    except ValueError as exc:
        raise SourceError(f"cannot parse: {exc}") from None


def parses_in_batches(text: str) -> bool:
    """Whether the text is large enough to be parsed a batch at a time (`parsed_batches`)."""
    return len(text) > 8 * PARSE_BATCH_CHARACTERS


def _quiet_parse(text: str) -> ast.Module:
    """`ast.parse`: the analysed code's SyntaxWarnings are not kvlint's to print."""
    with _WARNINGS_FILTER, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(text)


def _parsed_in_batches(text: str) -> ast.Module | None:
    """The module `ast.parse(text)` gives, parsed a batch of top-level statements at a time; None when a batch
    does not parse (the whole text then says why, as CPython would).

    `ast.parse` holds its C tree and the Python one at once, twice the size of the tree it returns; a batch
    at a time, only a batch's C tree is added (`parsed_batches` says where batches start)."""
    body: list[ast.stmt] = []
    for batch in parsed_batches(text):
        if batch is None:
            return None
        body += batch.body
    return ast.Module(body=body, type_ignores=[])


def parsed_batches(text: str) -> Iterator[ast.Module | None]:
    """The text parsed a batch of about `PARSE_BATCH_CHARACTERS` at a time, in order; None for a batch that
    does not parse alone (then the text is to be parsed whole, to say why as CPython would).

    A batch starts at a line that starts a top-level `def`, `class` or first decorator (the text the flow
    analysis reads has no blank lines between its units), and is preceded by as many line breaks as come
    before it, so positions are the file's. Where such a line is inside a string or brackets, or continues a
    decorator, the batch before it does not parse on its own (it ends in an open string, bracket or
    decorator); where every batch parses, each starts a logical line at depth 0 of the text, and the
    statements are those of one parse."""
    start, line = 0, 1
    while start < len(text):
        end = _batch_end(text, start + PARSE_BATCH_CHARACTERS)
        try:
            yield _quiet_parse("\n" * (line - 1) + text[start:end])
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            yield None
            return
        line += text.count("\n", start, end) + text.count("\r", start, end) - text.count("\r\n", start, end)
        start = end


def unit_batches(lines: Sequence[str], starts: Sequence[int], characters: int) -> Iterator[tuple[int, str]]:
    """The text of `lines` cut, at some of `starts` (1-based lines where a top-level statement starts), into
    batches of whole statements of at least `characters` (the last: what is left): (its first line, its text)
    for each, in order. Parsed after as many line breaks as come before it, a batch has the file's positions
    and the statements of one parse (where the starts are right: a unit ends where the next one starts)."""
    begin = previous = 1
    size = 0
    for end in (*(start for start in starts if 1 < start <= len(lines)), len(lines) + 1):
        size += sum(map(len, lines[previous - 1 : end - 1]))
        previous = end
        if size >= characters or end > len(lines):
            yield begin, "".join(lines[begin - 1 : end - 1])
            begin, size = end, 0


def _batch_end(text: str, position: int) -> int:
    """Where the batch that reaches `position` ends: at the next line that starts a top-level definition or
    its first decorator, or at the end of the text (when what is left is less than half a batch)."""
    while True:
        found = _BATCH_START.search(text, position)
        if found is None or len(text) - found.end() <= PARSE_BATCH_CHARACTERS // 2:
            return len(text)
        above = max(text.rfind("\n", 0, found.start()), text.rfind("\r", 0, found.start())) + 1
        if not text.startswith("@", above):
            return found.end()
        position = found.end()  # a decorated definition: the batch takes its decorators with it


def split_lines(text: str) -> list[str]:
    """Split like Python's tokenizer: only \\r\\n, \\r and \\n end a line (not \\f or \\x1c)."""
    return _LINE.findall(text)


_WIDE_BOMS = (  # the UTF-32 marks first: each starts with a UTF-16 one
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)
_WIDE_BOM_MARKS = tuple(bom for bom, _ in _WIDE_BOMS)


def decode_source(data: bytes) -> str:
    """Decode source bytes as Python does (BOM, coding cookie, UTF-8 default)."""
    return decode_source_as(data)[0]


def decode_source_as(data: bytes) -> tuple[str, str]:
    """`decode_source`, and the codec it decoded with (`utf-8`, `utf-8-sig` or the coding cookie's)."""
    if data.startswith(_WIDE_BOM_MARKS):  # one test for the four
        name = next(name for bom, name in _WIDE_BOMS if data.startswith(bom))
        raise SourceError(
            f"cannot decode: {name} (byte order mark); Python source must be UTF-8 "
            "or an ASCII-compatible encoding named in a coding cookie"
        )
    reject_nul(data)
    encoding = "utf-8-sig" if data.startswith(codecs.BOM_UTF8) else "utf-8"
    cookie = coding_cookie(data)
    if cookie is not None:
        try:
            encoding = codecs.lookup(cookie).name
        except LookupError:
            raise SourceError(f"cannot decode: unknown encoding {cookie!r} in the coding cookie") from None
        if data.startswith(codecs.BOM_UTF8) and encoding != "utf-8":
            raise SourceError(f"cannot decode: a UTF-8 byte order mark with a {cookie!r} coding cookie")
        if encoding == "utf-8" and data.startswith(codecs.BOM_UTF8):
            encoding = "utf-8-sig"
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1)
        name = "utf-8" if encoding == "utf-8-sig" else encoding
        raise SourceError(f"cannot decode as {name}: {exc.reason} at byte {exc.start}", line, column) from None
    return text, encoding


_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
_BLANK_OR_COMMENT = re.compile(rb"^[ \t\f]*(?:[#\r]|$)")  # a first line the cookie may follow


def coding_cookie(data: bytes) -> str | None:
    """Return the PEP 263 coding cookie of the first two lines, as CPython finds it."""
    lines = data.split(b"\n", 2)[:2]
    for number, line in enumerate(lines):
        match = _COOKIE.match(line)
        if match:
            return match.group(1).decode("ascii", "replace")
        if number == 0 and not _BLANK_OR_COMMENT.match(line):
            break  # the cookie may sit on line 2 only when line 1 is blank or a comment
    return None


def reject_nul(source: bytes | str) -> None:
    """Raise KVC900's NUL byte error, positioned at the first NUL, if there is one."""
    nul, newline = (source.find(b"\0"), b"\n") if isinstance(source, bytes) else (source.find("\0"), "\n")
    if nul >= 0:
        line = source.count(newline, 0, nul) + 1  # type: ignore[arg-type]
        column = nul - (source.rfind(newline, 0, nul) + 1)  # type: ignore[arg-type]
        raise SourceError("cannot parse: source contains a NUL byte", line, column)


def module_name_for(path: Path) -> tuple[str, bool]:
    """Return the dotted module name of a file (its packages: `packages_of`) and whether it is a package."""
    path = path.resolve() if path.is_absolute() else Path.cwd().joinpath(path).resolve()
    is_package = path.stem == "__init__"
    packages = packages_of(path.parent)[0]
    return ".".join(packages if is_package else (*packages, path.stem)), is_package


def packages_of(directory: Path) -> tuple[tuple[str, ...], Path]:
    """The packages a module of `directory` (absolute) is in, outermost first, and the directory the outermost
    sits in (the root its name is relative to), as mypy crawls them up (`find_sources.crawl_up`):

    - a directory holding an `__init__.py` is a regular package, within the regular packages above it;
    - a directory without one is a portion of a namespace package (PEP 420) when a regular package holds it,
      at any remove (`pkg/v1/engine/` in `pkg/v1/`): ty and pyright name such a module as mypy does, by its
      path under the root, so `from .checks import f` in `pkg/v1/engine/consumer.py` is `pkg.v1.engine.checks`.
      The crawl stops at a name that is no identifier and at the project's root (`PROJECT_MARKERS`): what
      lies above the project names none of its modules;
    - else it is no package: its modules are top-level, named by their file alone, relative to it.
    """
    regular: list[str] = []
    current = directory
    while (current / "__init__.py").is_file() and current.parent != current:
        regular.append(current.name)
        current = current.parent
    if regular:
        return tuple(reversed(regular)), current
    portions: list[str] = []
    current = directory
    while current.name.isidentifier() and current.parent != current and not any(
            (current / marker).exists() for marker in PROJECT_MARKERS):
        portions.append(current.name)
        current = current.parent
        if (current / "__init__.py").is_file():
            above, root = packages_of(current)
            return (*above, *reversed(portions)), root
    return (), directory
