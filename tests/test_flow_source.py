"""The flow analysis reads `ast`: positions come back as the file's lines and character columns, a
`def`'s header keeps its marker comments, 3.12 syntax is lowered in place, and libcst is imported only
to build a fix."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

from kvlint.config import Config
from kvlint.flow.lowering import lower_newer_syntax
from kvlint.flow.source import SourceText
from kvlint.running.runner import run
from tests.conftest import ROOT

AGGREGATOR = """
    def tally(outputs):
        for out in outputs:
            kvo = out.kv_connector_output
            print(kvo.finished_sending)
"""


def _write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def _findings(directory: Path) -> list[tuple[int, int, str]]:
    return [(f.line, f.column, f.code) for f in run([directory], Config(), jobs=1).findings]


def test_columns_are_characters_after_non_ascii_text_and_lines_map_back() -> None:
    text = "x = 'é😀'; y = kvo.finished_sending\nz = 1\n"
    source = SourceText(text, [7, 9])
    assert SourceText("a = 1\f\x1c\u2028 # c\nb = 2\n", [1, 2]).lines == ["a = 1\f\x1c\u2028 # c\n", "b = 2\n"]
    node = ast.parse(text).body[1].value  # `kvo.finished_sending`: byte 18, character 14
    span = source.span(node)
    assert (span.line, span.column, span.end_line, span.end_column) == (7, 14, 7, 34)
    assert source.segment(node) == "kvo.finished_sending"
    call = ast.parse("f(a,\n  'ü', b)\n").body[0].value
    assert SourceText("f(a,\n  'ü', b)\n", [1, 2]).segment(call) == "f(a,\n  'ü', b)"


def test_a_definitions_name_has_its_own_position() -> None:
    text = "async  def  ŝtep(x):\n    pass\nclass Box(object):\n    pass\ndef \\\n  late(): pass\n"
    source = SourceText(text, [1, 2, 3, 4, 5, 6])
    step, box, late = ast.parse(text).body
    assert source.segment(source.name_of(step)) == "ŝtep"
    assert (source.span(source.name_of(step)).column, source.span(source.name_of(step)).end_column) == (12, 16)
    assert source.segment(source.name_of(box)) == "Box"
    assert source.name_of(late) is late  # the name on a later line: the definition stands for it


def test_a_marker_anywhere_on_a_defs_header_and_nowhere_else(tmp_path: Path) -> None:
    _write(tmp_path, "runner.py", """
        from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT


        def after_the_colon(
            self,
            scheduler_output,
        ):  # kvlint: connector-path
            return EMPTY_MODEL_RUNNER_OUTPUT


        def on_the_def_line(self,  # kvlint: connector-path
                            scheduler_output):
            return EMPTY_MODEL_RUNNER_OUTPUT


        def in_the_body(self):
            # kvlint: connector-path
            return EMPTY_MODEL_RUNNER_OUTPUT


        def one_line(self): return EMPTY_MODEL_RUNNER_OUTPUT  # kvlint: connector-path


        def hash_in_a_default(self, sep="#", tag='x # y'):
            # kvlint: connector-path
            return EMPTY_MODEL_RUNNER_OUTPUT


        def marker_in_a_string(self, text="# kvlint: connector-path"):
            return EMPTY_MODEL_RUNNER_OUTPUT
    """)
    assert _findings(tmp_path) == [  # a marker in a body marks nothing, and says so (KVC101)
        (8, 4, "KVC002"), (13, 4, "KVC002"), (17, 4, "KVC101"), (21, 20, "KVC002"), (25, 4, "KVC101"),
    ]


def test_newer_syntax_is_lowered_in_place(tmp_path: Path) -> None:
    lowered = lower_newer_syntax("type Alias[T] = list[T]\ndef step[T](out: T): pass\nclass Box[T]: pass\n")
    assert lowered == "pass                   \ndef step   (out: T): pass\nclass Box   : pass\n"
    assert lower_newer_syntax("type X = int; y = 1\n") == "pass        ; y = 1\n"  # an alias is never run
    assert lower_newer_syntax("type X = (\n    int\n)\ny = 1\n") == "pass      \n       \n \ny = 1\n"
    assert lower_newer_syntax("def broken(:\n") is None
    _write(tmp_path, "runner.py", """
        type Maybe[T] = T | None


        class Runner[T]:
            def step[S](self, out: S, n: T) -> S:
                return out.kv_connector_output.finished_sending
    """)
    assert _findings(tmp_path) == [(6, 15, "KVC001")]  # the column of the file as written


def test_newer_syntax_that_cannot_be_lowered_is_the_syntax_error_ast_saw(tmp_path: Path) -> None:
    _write(tmp_path, "runner.py", """
        def step[
            T,
        ](out: T):
            return out.kv_connector_output.finished_sending
    """)
    (finding,) = run([tmp_path], Config(), jobs=1).findings
    assert finding.code == "KVC900" and finding.line == 1 and finding.message.startswith("cannot parse")


def _modules_after_check(path: Path) -> dict[str, object]:
    """Run `kvlint check --format json PATH` in a fresh interpreter; its findings and whether it imported libcst."""
    script = (
        "import contextlib, io, json, sys\n"
        "import kvlint.cli\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    try:\n"
        f"        kvlint.cli.main(['check', '--format', 'json', {str(path)!r}])\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print(json.dumps({'libcst': 'libcst' in sys.modules, 'findings': json.loads(out.getvalue())}))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120)
    return json.loads(done.stdout.splitlines()[-1])


def test_libcst_is_imported_only_to_build_a_fix(tmp_path: Path) -> None:
    clean = _write(tmp_path, "clean.py", AGGREGATOR.replace("print(kvo", "if kvo:\n                print(kvo"))
    assert _modules_after_check(clean) == {"libcst": False, "findings": []}
    flagged = _modules_after_check(_write(tmp_path, "flagged.py", AGGREGATOR))
    (finding,) = flagged["findings"]  # type: ignore[misc]
    assert finding["code"] == "KVC001" and finding["fix"]["applicability"] == "unsafe"
    assert flagged["libcst"] is True


def test_a_constant_index_is_one_key_however_it_is_spelled(tmp_path: Path) -> None:
    _write(tmp_path, "aggregator.py", """
        def tally(outs, flags):
            if outs["a"].kv_connector_output is not None:
                print(outs['a'].kv_connector_output.finished_sending)
            if outs[True].kv_connector_output is not None:
                print(outs[True].kv_connector_output.finished_sending)
            if outs[0x1].kv_connector_output is not None:
                print(outs[1].kv_connector_output.finished_sending)
            if outs["b"].kv_connector_output is not None:
                print(outs["c"].kv_connector_output.finished_sending)
    """)
    assert _findings(tmp_path) == [(9, 14, "KVC001")]


def test_lowering_keeps_the_files_lines_and_columns_around_odd_characters(tmp_path: Path) -> None:
    (tmp_path / "runner.py").write_text(
        "x = 1  # page\x0c break\n"
        "type Alias = int\n"
        "def step[Tø](out: Tø): return out.kv_connector_output.finished_sending\n",
        encoding="utf-8",
    )
    (finding,) = run([tmp_path], Config(), jobs=1).findings
    assert (finding.line, finding.column, finding.code) == (3, 30, "KVC001")
    assert "`out.kv_connector_output`" in finding.message


def test_an_index_too_long_to_print_is_no_key(tmp_path: Path) -> None:
    _write(tmp_path, "aggregator.py", f"""
        def tally(outs):
            print(outs[0x{"f" * 4000}].kv_connector_output.finished_sending)
    """)
    (finding,) = run([tmp_path], Config(), jobs=1).findings
    assert finding.code == "KVC001"
