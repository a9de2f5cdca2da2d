"""Source positions of libcst nodes, computed the way libcst's `PositionProvider` does, faster.

libcst computes positions by generating the code of the whole module while it
tracks line and column. Its `PositionProvider` builds two frozen dataclasses per
node, splits every token with a regular expression and enters a generator-based
context manager per expression: on vLLM's relevant code that is eight times the
cost of the code generation itself, and the single largest step of a run
(docs/design.md, "Why it is fast"). This module runs the same code generation with a leaner state
that records plain tuples. The spans are identical to `PositionProvider`'s, and
`tests/test_positions.py` compares the two over the fixtures and real vLLM.
"""

from __future__ import annotations

import re
from typing import Any

import libcst as cst
from libcst._nodes.internal import CodegenState

# (start line, start column, end line, end column): lines 1-based, columns 0-based, as libcst's CodeRange
NodeRange = tuple[int, int, int, int]  # not `sites.Span`, the class findings carry: a plain tuple

_NEWLINE = re.compile(r"\r\n?|\n")


def node_spans(module: cst.Module) -> dict[cst.CSTNode, NodeRange]:
    """Return the syntactic span of every node of `module` (what `PositionProvider` gives)."""
    state = _PositionState(default_indent=module.default_indent, default_newline=module.default_newline)
    module._codegen(state)
    return state.spans


def node_tree(
    module: cst.Module,
) -> tuple[dict[cst.CSTNode, NodeRange], dict[int, cst.CSTNode], dict[int, list[cst.CSTNode]]]:
    """The spans of `node_spans`, and from the same pass each node's parent and children (by `id()` of the
    node; the children in the order of libcst's `children`, which is the order code generation meets them).

    libcst's `children` visits a node's fields anew at each call; fix builders walk a statement's nodes
    several times, and reading the tree's shape once, while the positions are computed, is cheaper.
    """
    state = _TreeState(default_indent=module.default_indent, default_newline=module.default_newline)
    module._codegen(state)
    return state.spans, state.parents, state.children


class _PositionState(CodegenState):
    """libcst's code generation state, tracking the position of each node as plain tuples."""

    __slots__ = ("line", "column", "starts", "spans")

    def __init__(self, **fields: Any) -> None:
        super().__init__(**fields)
        self.line = 1
        self.column = 0
        self.starts: list[tuple[int, int]] = []
        self.spans: dict[cst.CSTNode, NodeRange] = {}

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        if "\n" in value or "\r" in value:
            pieces = _NEWLINE.split(value)
            self.line += len(pieces) - 1
            self.column = len(pieces[-1])
        else:
            self.column += len(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self.starts.append((self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        line, column = self.starts.pop()
        if node not in self.spans:  # a syntactic position recorded inside the node wins
            self.spans[node] = (line, column, self.line, self.column)

    def record_syntactic_position(  # type: ignore[override]
        self, node: cst.CSTNode, *, start_node: cst.CSTNode | None = None, end_node: cst.CSTNode | None = None
    ) -> _SyntacticPosition:
        return _SyntacticPosition(self, node, start_node, end_node)


class _SyntacticPosition:
    """The span of a node without the whitespace it owns (libcst's syntactic position)."""

    __slots__ = ("state", "node", "start_node", "end_node", "start")

    def __init__(
        self, state: _PositionState, node: cst.CSTNode, start_node: cst.CSTNode | None, end_node: cst.CSTNode | None
    ) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node
        self.start = (0, 0)

    def __enter__(self) -> None:
        self.start = (self.state.line, self.state.column)

    def __exit__(self, *exc: object) -> None:
        spans = self.state.spans
        start_line, start_column = self.start
        end_line, end_column = self.state.line, self.state.column
        if self.start_node is not None:
            start_line, start_column = spans[self.start_node][:2]
        if self.end_node is not None:
            end_line, end_column = spans[self.end_node][2:]
        spans[self.node] = (start_line, start_column, end_line, end_column)


class _TreeState(_PositionState):
    """`_PositionState` that also records which node's code generation each node's runs inside."""

    __slots__ = ("nodes", "parents", "children")

    def __init__(self, **fields: Any) -> None:
        super().__init__(**fields)
        self.nodes: list[cst.CSTNode] = []
        self.parents: dict[int, cst.CSTNode] = {}
        self.children: dict[int, list[cst.CSTNode]] = {}

    def before_codegen(self, node: cst.CSTNode) -> None:
        self.starts.append((self.line, self.column))
        if self.nodes:
            parent = self.nodes[-1]
            self.parents[id(node)] = parent
            self.children.setdefault(id(parent), []).append(node)
        self.nodes.append(node)

    def after_codegen(self, node: cst.CSTNode) -> None:
        self.nodes.pop()
        super().after_codegen(node)
