"""Syntax newer than the running Python, rewritten in place so that `ast` can parse it.

The flow analysis runs on `ast`, which knows only the running Python's grammar.
libcst knows newer grammar (3.12's `type` statements and type parameters). For a
file `ast` rejects, libcst parses it and each newer construct is overwritten by
older syntax of exactly the same length, so that every line and column the
analysis reports is still the file's own:

    type Alias[T] = X        ->    0;  Alias    = X
    def step[T](out: T):     ->    def step   (out: T):
    class Box[T]:            ->    class Box   :

Type parameters mean nothing to the analysis. A construct it cannot lower (type
parameters over several lines, 3.12's nested f-string quotes) leaves the file
unparsed: it is reported as the syntax error `ast` saw.
"""

from __future__ import annotations


def lower_newer_syntax(text: str) -> str | None:
    """`text` with its newer syntax lowered, or None when libcst cannot parse it either."""
    import libcst as cst

    from kvlint.positions import node_spans

    try:
        module = cst.parse_module(text)
    except (cst.ParserSyntaxError, SyntaxError, RecursionError, ValueError):
        return None
    spans = node_spans(module)
    lines = text.splitlines(keepends=True)
    blanks: list[tuple[int, int, int, int]] = []  # spans to overwrite with spaces
    keywords: list[tuple[int, int]] = []  # `type` keywords to overwrite with `0;  `
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.TypeAlias)) and node.type_parameters is not None:
            blanks.append(spans[node.type_parameters])
        if isinstance(node, cst.TypeAlias):
            line, column, _, _ = spans[node]
            keywords.append((line, column))
        stack.extend(node.children)
    for line, column, end_line, end_column in blanks:
        if line != end_line:
            return None
        text_line = lines[line - 1]
        lines[line - 1] = text_line[:column] + " " * (end_column - column) + text_line[end_column:]
    for line, column in keywords:
        text_line = lines[line - 1]
        lines[line - 1] = text_line[:column] + "0;  " + text_line[column + len("type"):]
    return "".join(lines)
