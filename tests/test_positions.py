"""kvlint's position computation gives exactly what libcst's PositionProvider gives, node for node."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from kvlint.config import Config
from kvlint.engine import prepare_source, reduced_text
from kvlint.source import decode_source
from kvlint.fixing.positions import node_spans, node_tree
from tests.conftest import FIXTURES
from tests.support.vllm_sources import vllm_tree

# Layouts whose positions are easy to get wrong: line endings, continuations,
# parentheses, decorators, comments, strings spanning lines, nested bodies.
AWKWARD = {
    "crlf": "def f(out):\r\n    kvo = out.kv_connector_output\r\n    return kvo.finished_sending\r\n",
    "lone_cr": "def f(out):\r    return (out\r        .kv_connector_output)\r",
    "mixed_newlines": "x = 1\r\ny = 2\rz = 3\n",
    "no_final_newline": "def f(out):\n    return out.kv_connector_output",
    "continuation": "total = 1 + \\\n    2\nif (a and\n        b):  # why\n    pass\n",
    "parentheses": "x = ((a).b)[(c)]\ny = (yield_ for yield_ in ((z)))\nf((g)(h), *(i), **(j))\n",
    "decorated": "@a.b(\n    c)\n@d\nclass K(  # c\n    Base):\n    @staticmethod\n    def m(): ...\n",
    "strings": 'x = """one\ntwo\r\nthree"""\ny = f"{a!r:>{w}} {b.c}" "\\\n"\nz = rb\'\\x00\'\n',
    "compound": (
        "async def f(x):\n"
        "    async with a as (b, c), d:\n"
        "        async for e in g:\n"
        "            match e:\n"
        "                case {'k': [1, *rest]} if rest:\n"
        "                    return (y := rest)\n"
        "                case _:\n"
        "                    pass\n"
        "    try:\n        pass\n    except* (E, F) as err:\n        raise\n    else:\n        pass\n"
        "    finally:\n        del x\n"
        "    while not x: break\n"
        "    else: lambda q=1, *, r: q\n"
    ),
    "tabs_and_form_feed": "if x:\n\tif y:\n\t\tpass\n\x0c\ndef g():\n  return 1\n",
    "comments_only": "# one\n\n# two\n",
    "empty": "",
}


def _assert_same_spans(text: str) -> int:
    module = cst.parse_module(text)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    actual = node_spans(module)
    assert actual.keys() == expected.keys()
    for node, code_range in expected.items():
        start, end = code_range.start, code_range.end
        assert actual[node] == (start.line, start.column, end.line, end.column), (type(node).__name__, text)
    return len(expected)


@pytest.mark.parametrize("name", sorted(AWKWARD))
def test_awkward_layouts(name: str) -> None:
    assert _assert_same_spans(AWKWARD[name]) >= 1


def test_every_fixture_file() -> None:
    paths = sorted((FIXTURES / "vllm_like").glob("*.py"))
    for path in paths + sorted((FIXTURES / "nasty").glob("*.py")):
        try:
            text = decode_source(path.read_bytes())
            cst.parse_module(text)
        except Exception:  # noqa: BLE001 - the fixtures that no parser accepts have no positions
            continue
        _assert_same_spans(text)
    assert len(paths) > 15


@pytest.mark.vllm
def test_the_code_kvlint_parses_in_the_newest_vllm() -> None:
    """Every compact text kvlint hands libcst for vLLM 0.33.0, plus its largest whole file."""
    tree = vllm_tree("0.33.0")
    config = Config()
    compared = 0
    for path in sorted((tree / "vllm").rglob("*.py")):
        prepared = prepare_source(path.read_bytes(), str(path), config)
        if prepared.relevant and prepared.error is None and prepared.fallback_error is None:
            compared += _assert_same_spans(reduced_text(prepared, config)[0])
    largest = tree / "vllm" / "v1" / "worker" / "gpu_model_runner.py"
    compared += _assert_same_spans(Path(largest).read_text(encoding="utf-8"))
    assert compared > 100_000


_WHITESPACE = (cst.BaseParenthesizableWhitespace, cst.TrailingWhitespace, cst.EmptyLine, cst.Newline, cst.Comment)


def _assert_same_tree(text: str) -> int:
    """`node_tree` gives `node_spans`'s spans and, for every node, libcst's parent and children (whitespace
    nodes aside, which libcst's `children` lists in another order for a few nodes, `Del`, `AsName`, and
    where code generation writes none, a `{...}` pattern without `**rest`: no fix builder looks for them)."""
    module = cst.parse_module(text)
    spans, parents, children = node_tree(module)
    assert spans == node_spans(module)
    count = 0
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        count += 1
        expected = list(node.children)
        recorded = children.get(id(node), [])
        code = [n for n in expected if not isinstance(n, _WHITESPACE)]
        assert [n for n in recorded if not isinstance(n, _WHITESPACE)] == code, type(node).__name__
        assert {id(n) for n in recorded} <= {id(n) for n in expected}
        assert all(parents[id(child)] is node for child in code)
        stack.extend(expected)
    return count


@pytest.mark.parametrize("name", sorted(AWKWARD))
def test_the_tree_fix_builders_walk_is_libcsts(name: str) -> None:
    assert _assert_same_tree(AWKWARD[name]) >= 1


def test_the_tree_of_every_fixture_file_is_libcsts() -> None:
    checked = 0
    for path in sorted(FIXTURES.rglob("*.py")):
        try:
            text = decode_source(path.read_bytes())
            cst.parse_module(text)
        except Exception:  # noqa: BLE001 - the fixtures that no parser accepts have no tree
            continue
        checked += _assert_same_tree(text)
    assert checked > 100_000
