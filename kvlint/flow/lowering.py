"""Syntax newer than the running Python, rewritten in place so that `ast` can parse it.

The flow analysis runs on `ast`, which knows only the running Python's grammar.
libcst knows newer grammar (3.12's `type` statements and type parameters). For a
file `ast` rejects, libcst parses it and each newer construct is overwritten by
older syntax of exactly the same length, so that every line and column the
analysis reports is still the file's own:

    type Alias[T] = X        ->    pass
    def step[T](out: T):     ->    def step   (out: T):
    class Box[T]:            ->    class Box   :

A type alias's value is never evaluated where it is written, and type parameters
mean nothing to the analysis. A construct it cannot lower (type parameters of a
`def` or `class` over several lines, 3.12's nested f-string quotes) leaves the
file unparsed: it is reported as the syntax error `ast` saw.
"""

from __future__ import annotations


def lower_newer_syntax(text: str) -> str | None:
    """`text` with its newer syntax lowered, or None when libcst cannot parse it either."""
    import libcst as cst

    from kvlint.source import split_lines
    from kvlint.fixing.positions import node_spans

    try:
        module = cst.parse_module(text)
    except (cst.ParserSyntaxError, SyntaxError, RecursionError, ValueError):
        return None
    spans = node_spans(module)
    lines = split_lines(text)  # libcst's lines: a form feed or U+2028 ends none
    aliases: list[tuple[int, int, int, int]] = []  # `type` statements: to become `pass` and blank lines
    parameters: list[tuple[int, int, int, int]] = []  # type parameters: to become spaces
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.TypeAlias):
            aliases.append(spans[node])
            continue
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)) and node.type_parameters is not None:
            parameters.append(spans[node.type_parameters])
        stack.extend(node.children)
    for line, column, end_line, end_column in parameters:
        if line != end_line:
            return None
        lines[line - 1] = _blanked(lines[line - 1], column, end_column)
    for line, column, end_line, end_column in aliases:
        last = lines[end_line - 1]
        if last[:end_column].rstrip().endswith(";"):  # `type X = int; y = 1`: the `;` stays
            end_column = last.rindex(";", 0, end_column)
            if end_line != line:
                return None  # `pass` and the next statement would be lines apart
        for number in range(line, end_line + 1):
            start = column if number == line else 0
            end = end_column if number == end_line else len(lines[number - 1].rstrip("\r\n"))
            lines[number - 1] = _blanked(lines[number - 1], start, end)
        lines[line - 1] = lines[line - 1][:column] + "pass" + lines[line - 1][column + 4 :]
    return "".join(lines)


def _blanked(line: str, start: int, end: int) -> str:
    return line[:start] + " " * (end - start) + line[end:]
