"""The editor's re-analysis of one changed function (`kvlint.server.incremental`): after any edit, the findings
(with their fixes) are exactly those of a full analysis of the edited text.

The property: chains of generated edits (comments, blank lines, statements, guards, deletions, renamed
words, `# noqa`, broken and mended syntax, changed annotations, imports) over every file of several
fixture trees and over real vLLM files, each text analysed from the last analysis and from nothing, the
two compared. Then targeted edits, each checking which path it took as well: inside a body (incremental),
a return annotation, an import, a line above a unit, syntax broken and mended, a class field.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from kvlint.config import Config, load_config
from kvlint.server.analysis import DocumentAnalysis, analyse_text
from kvlint.server.documents import Document
from kvlint.server.incremental import changed_lines
from kvlint.server.project import ProjectIndex
from kvlint.source import split_lines
from tests.conftest import FIXTURES

TREES = ["realistic", "realistic_b", "realistic_c", "realistic_e", "realistic_ec", "realistic_f", "realistic_h",
         "vllm_like", "summaries", "fixes", "server_workspace"]
_WORD = re.compile(r"\b[A-Za-z_]\w*\b")
_SWAPS = [("is None", "is not None"), ("is not None", "is None"), ("kv_connector_output", "finished_sending"),
          ("return", "return None  #"), ("if ", "if not "), ("or ()", ""), ("copy.copy(", "(")]


def _findings(analysis: DocumentAnalysis) -> list[tuple[object, ...]]:
    """Everything a finding says, its fix and why it has none included (`Finding` equality leaves them out)."""
    return [(f, f.function, f.source_line, f.fix, f.no_fix) for f in analysis.fixed_findings()]


def _edit(rng: random.Random, lines: list[str], original: list[str]) -> tuple[str, list[str]]:
    """One generated edit of `lines`: its kind and the new lines."""
    lines = list(lines)
    if not lines:
        return "mend", list(original)
    inside = [n for n, text in enumerate(lines) if text.startswith((" ", "\t")) and not text.lstrip().startswith(
        ("def ", "async def ", "@", "class "))]
    number = rng.choice(inside) if inside and rng.random() < 0.7 else rng.randrange(len(lines))
    line = lines[number]
    body = line.rstrip("\r\n")
    indent = body[: len(body) - len(body.lstrip())]
    kind = rng.choice(["comment", "comment", "blank", "pass", "guard", "delete", "duplicate", "swap", "swap",
                       "word", "noqa", "break", "annotation", "import", "type", "attribute"])
    if kind == "comment":
        lines[number] = body + "  # an edit\n"
    elif kind == "blank":
        lines.insert(number, "\n")
    elif kind == "pass":
        lines.insert(number, f"{indent}pass\n")
    elif kind == "guard":
        lines[number:number] = [f"{indent}if kvo is None:\n", f"{indent}    return None\n"]
    elif kind == "delete":
        del lines[number]
    elif kind == "duplicate":
        lines.insert(number, line if line.endswith("\n") else line + "\n")
    elif kind == "swap":
        old, new = rng.choice(_SWAPS)
        lines[number] = line.replace(old, new, 1)
    elif kind == "word":
        words = _WORD.findall(body)
        if words:
            target = rng.choice(words)
            replacement = rng.choice(_WORD.findall("".join(original[:200])) or ["x"])
            lines[number] = line.replace(target, replacement, 1)
    elif kind == "noqa":
        lines[number] = body + "  # noqa: KVC001\n"
    elif kind == "break":
        lines[number] = body + " (\n"
    elif kind == "mend":
        return kind, list(original)
    elif kind == "annotation":
        defs = [n for n, text in enumerate(lines) if text.lstrip().startswith("def ") and text.rstrip().endswith(":")]
        if defs:
            at = rng.choice(defs)
            lines[at] = re.sub(r"\)( -> [^:]+)?:\s*$", ") -> KVConnectorOutput | None:\n", lines[at], count=1)
    elif kind == "import":
        lines.insert(number, f"{indent}import copy\n")
    elif kind == "type":
        lines.insert(number, f"{indent}kvo: KVConnectorOutput | None = None\n")
    elif kind == "attribute":
        lines.insert(number, f"{indent}self.kvo = out.kv_connector_output\n")
    return kind, lines


def _chain(path: Path, config: Config, project: ProjectIndex | None, edits: int, seed: int) -> dict[str, int]:
    """Edit the file `edits` times from its own text; each analysis from the last must equal one from nothing.
    Returns how many analyses took the incremental path, by edit kind."""
    rng = random.Random(seed)
    original = split_lines(path.read_text(encoding="utf-8"))
    uri = path.as_uri()
    lines = original
    previous = analyse_text(uri, 0, "".join(lines), path, config, project)
    incremental: dict[str, int] = {}
    last_parsed = lines
    for version in range(1, edits + 1):
        if previous.findings and previous.findings[0].code == "KVC900" and rng.random() < 0.7:
            kind, lines = "mend", last_parsed  # typing on until it parses again
        else:
            kind, lines = _edit(rng, lines, original)
        text = "".join(lines)
        again = analyse_text(uri, version, text, path, config, project, previous, split_lines(text))
        whole = analyse_text(uri, version, text, path, config, project)
        assert _findings(again) == _findings(whole), (path, version, kind)
        assert again.lines == whole.lines
        incremental[kind] = incremental.get(kind, 0) + again.incremental
        if not (again.findings and again.findings[0].code == "KVC900"):
            last_parsed = lines
        previous = again
    return incremental


@pytest.mark.parametrize("tree", TREES)
def test_generated_edits_of_fixture_files_give_a_full_analysis_findings(tree: str) -> None:
    root = FIXTURES / tree
    config = load_config([root])
    project = ProjectIndex(root, config)
    project.build()
    taken: dict[str, int] = {}
    files = sorted(root.rglob("*.py"), key=lambda path: (-path.stat().st_size, path))
    marked = [path for path in files if "connector-path" in path.read_text(encoding="utf-8")]  # KVC101 markers
    for number, path in enumerate(dict.fromkeys([*files[:4], *marked])):
        for kind, count in _chain(path, config, project, 16, number).items():
            taken[kind] = taken.get(kind, 0) + count
    assert sum(taken.values()) >= 5, taken  # the incremental path is taken, not only the full one


def test_generated_edits_of_a_file_outside_any_folder(tmp_path: Path) -> None:
    """No workspace folder: the buffer's own index, rebuilt or kept, as `kvlint check FILE` has it."""
    source = FIXTURES / "realistic" / "kv_aggregator.py"
    path = tmp_path / "alone.py"
    path.write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    taken = _chain(path, Config(), None, 40, 7)
    assert sum(taken.values()) >= 5, taken


@pytest.mark.vllm
@pytest.mark.parametrize(("release", "file"), [
    ("0.33.0", "vllm/v1/worker/gpu_model_runner.py"),
    ("0.33.0", "vllm/v1/worker/gpu_worker.py"),
    ("0.10.1", "vllm/v1/worker/kv_connector_model_runner_mixin.py"),  # two KVC002 findings with fixes
    ("0.10.1", "vllm/v1/worker/gpu_worker.py"),
])
def test_generated_edits_of_real_vllm_files_give_a_full_analysis_findings(release: str, file: str) -> None:
    from tests.support.vllm_sources import vllm_tree

    root = vllm_tree(release)
    config = load_config([root])
    project = ProjectIndex(root, config)
    project.build()
    taken = _chain(root / file, config, project, 40, 3)
    assert sum(taken.values()) >= 5, taken


# ------------------------------------------------------------------ targeted edits

RUNNER = '''\
import copy

from kvstack.outputs import EMPTY_MODEL_RUNNER_OUTPUT, KVConnectorOutput, ModelRunnerOutput

LIMIT = 4


class Runner:
    steps: int = 0

    def merge(self, outputs):
        done = set()
        for out in outputs:
            kvo = out.kv_connector_output
            done |= kvo.finished_sending
        return done

    def helper(self):
        return LIMIT


def step(sched) -> ModelRunnerOutput:
    kvo = sched.kv_connector_output
    if kvo is None:
        return EMPTY_MODEL_RUNNER_OUTPUT
    return ModelRunnerOutput(kv_connector_output=kvo)


def tally(outs):
    for out in outs:
        print(out.kv_connector_output.finished_recving)
'''


@pytest.fixture()
def runner(tmp_path: Path) -> tuple[Path, Config, ProjectIndex]:
    from tests.conftest import FIXTURES as fixtures

    root = tmp_path / "ws"
    (root / "kvstack").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.kvlint]\n")
    (root / "kvstack" / "__init__.py").write_text("")
    (root / "kvstack" / "outputs.py").write_text(
        (fixtures / "server_workspace" / "kvstack" / "outputs.py").read_text(encoding="utf-8"))
    path = root / "kvstack" / "runner.py"
    path.write_text(RUNNER)
    config = load_config([root])
    project = ProjectIndex(root, config)
    project.build()
    return path, config, project


def _step(path: Path, config: Config, project: ProjectIndex, previous: DocumentAnalysis, text: str
          ) -> DocumentAnalysis:
    assert text != previous.text, "the edit changed nothing"
    again = analyse_text(path.as_uri(), (previous.version or 0) + 1, text, path, config, project, previous)
    whole = analyse_text(path.as_uri(), (previous.version or 0) + 1, text, path, config, project)
    assert _findings(again) == _findings(whole)
    return again


def test_an_edit_inside_a_body_reanalyses_that_function_only(runner: tuple[Path, Config, ProjectIndex]) -> None:
    path, config, project = runner
    first = analyse_text(path.as_uri(), 1, RUNNER, path, config, project)
    assert not first.incremental and first.state is not None
    codes = sorted(f.code for f in first.findings)
    assert codes == ["KVC001", "KVC001", "KVC005"], codes
    guarded = RUNNER.replace("            done |= kvo.finished_sending\n",
                             "            if kvo is None:\n                continue\n"
                             "            done |= kvo.finished_sending or set()\n")
    second = _step(path, config, project, first, guarded)
    assert second.incremental
    tally = next(n for n, line in enumerate(split_lines(guarded), 1) if "finished_recving" in line)
    assert [f.line for f in second.findings] == [tally] and tally == RUNNER.count("\n", 0, RUNNER.index(
        "finished_recving")) + 3  # `tally`'s only, two lines further down now
    back = _step(path, config, project, second, RUNNER)
    assert back.incremental and _findings(back) == _findings(first)


def test_a_changed_return_annotation_is_a_full_analysis(runner: tuple[Path, Config, ProjectIndex]) -> None:
    path, config, project = runner
    first = analyse_text(path.as_uri(), 1, RUNNER, path, config, project)
    edited = RUNNER.replace("    def helper(self):\n        return LIMIT\n",
                            "    def helper(self) -> KVConnectorOutput | None:\n        return LIMIT\n")
    second = _step(path, config, project, first, edited)
    assert not second.incremental


def test_a_new_return_type_inside_a_body_is_a_full_analysis(runner: tuple[Path, Config, ProjectIndex]) -> None:
    """A change of what a function declares without touching its header (it starts to return the sentinel:
    a producer now) changes the declarations: the whole file is analysed."""
    path, config, project = runner
    first = analyse_text(path.as_uri(), 1, RUNNER, path, config, project)
    edited = RUNNER.replace("        return LIMIT\n", "        return EMPTY_MODEL_RUNNER_OUTPUT\n")
    assert not _step(path, config, project, first, edited).incremental


def test_an_import_is_a_full_analysis(runner: tuple[Path, Config, ProjectIndex]) -> None:
    path, config, project = runner
    first = analyse_text(path.as_uri(), 1, RUNNER, path, config, project)
    at_top = _step(path, config, project, first, "import dataclasses\n" + RUNNER)
    assert not at_top.incremental
    inside = RUNNER.replace("        return LIMIT\n", "        import copy as c\n        return LIMIT\n")
    assert not _step(path, config, project, at_top, inside).incremental


def test_a_line_added_above_a_unit_moves_its_findings(runner: tuple[Path, Config, ProjectIndex]) -> None:
    path, config, project = runner
    first = analyse_text(path.as_uri(), 1, RUNNER, path, config, project)
    edited = RUNNER.replace("        return LIMIT\n", "        return LIMIT\n\n    # a comment\n")
    second = _step(path, config, project, first, edited)
    assert second.incremental
    assert [f.line for f in second.findings] == [f.line if f.line < 20 else f.line + 2 for f in first.findings]


def test_broken_and_mended_syntax(runner: tuple[Path, Config, ProjectIndex]) -> None:
    path, config, project = runner
    first = analyse_text(path.as_uri(), 1, RUNNER, path, config, project)
    broken = _step(path, config, project, first, RUNNER.replace("        return LIMIT\n", "        return (LIMIT\n"))
    assert [f.code for f in broken.findings] == ["KVC900"]
    assert broken.state is first.state  # the last text that parsed, which the next one is compared with
    again = _step(path, config, project, broken, RUNNER.replace("        return LIMIT\n", "        return (LIMIT +\n"))
    assert [f.code for f in again.findings] == ["KVC900"]
    mended = _step(path, config, project, again, RUNNER.replace("        return LIMIT\n", "        return LIMIT + 1\n"))
    assert mended.incremental and _findings(mended) == _findings(first)
    back = _step(path, config, project, _step(path, config, project, mended, RUNNER + "(\n"), RUNNER)
    assert back.incremental and _findings(back) == _findings(first)


def test_newer_syntax_inside_a_function(runner: tuple[Path, Config, ProjectIndex]) -> None:
    """A function given a nested `def` with type parameters (3.12): on an older Python, `ast` rejects the file and
    libcst lowers it, as for `kvlint check`."""
    path, config, project = runner
    first = analyse_text(path.as_uri(), 1, RUNNER, path, config, project)
    edited = RUNNER.replace("        return LIMIT\n", "        def inner[T](value: T) -> T:\n            return value\n"
                                                      "        return LIMIT\n")
    second = _step(path, config, project, first, edited)
    assert "KVC900" not in {f.code for f in second.findings}


def test_a_class_field_or_a_module_global_is_a_full_analysis(runner: tuple[Path, Config, ProjectIndex]) -> None:
    path, config, project = runner
    first = analyse_text(path.as_uri(), 1, RUNNER, path, config, project)
    field_ = _step(path, config, project, first, RUNNER.replace("    steps: int = 0\n",
                                                                "    steps: KVConnectorOutput | None = None\n"))
    assert not field_.incremental
    global_ = _step(path, config, project, field_, RUNNER.replace("LIMIT = 4\n", "LIMIT = EMPTY_MODEL_RUNNER_OUTPUT\n"))
    assert not global_.incremental
    attribute = RUNNER.replace("        return LIMIT\n", "        self.kvo = None\n        return LIMIT\n")
    assert not _step(path, config, project, global_, attribute).incremental  # `self.x` is the class's


def test_a_new_finding_in_an_edited_function(runner: tuple[Path, Config, ProjectIndex]) -> None:
    path, config, project = runner
    first = analyse_text(path.as_uri(), 1, RUNNER, path, config, project)
    edited = RUNNER.replace("ModelRunnerOutput(kv_connector_output=kvo)\n", "ModelRunnerOutput()\n")
    second = _step(path, config, project, first, edited)
    assert second.incremental
    assert "KVC003" in {f.code for f in second.findings} and "KVC003" not in {f.code for f in first.findings}


# ------------------------------------------------------------------ the parts


def test_changed_lines() -> None:
    assert changed_lines(["a", "b", "c"], ["a", "b", "c"]) is None
    assert changed_lines(["a", "b", "c"], ["a", "x", "c"]) == (2, 2, 2)
    assert changed_lines(["a", "b", "c"], ["a", "b", "x", "c"]) == (3, 2, 3)  # an insertion: old lines 3..2
    assert changed_lines(["a", "b", "c"], ["a", "c"]) == (2, 2, 1)
    assert changed_lines(["a"], []) == (1, 1, 0)


def test_a_document_splits_only_the_lines_around_a_change() -> None:
    """Generated changes of texts with every kind of line ending: the document's lines are always those of
    its whole text, split again, and unchanged lines are the same objects."""
    rng = random.Random(5)
    alphabet = ["a", "b", "\n", "\r", "\r\n", "é", "😀", " ", "x = 1\n"]
    for _ in range(3000):
        document = Document("file:///w/x.py", "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))), 1)
        for _ in range(3):
            count = len(document.lines())
            change = (rng.randint(0, count + 1), rng.randint(0, 6), rng.randint(0, count + 1), rng.randint(0, 6))
            expected = _apply_by_offsets(document.text, "".join(rng.choice(alphabet) for _ in range(2)), change)
            document.apply_change(expected[1], change, "utf-16")
            assert document.text == expected[0]
            assert document.lines() == split_lines(document.text)
    big = Document("file:///w/big.py", "".join(f"line {n}\n" for n in range(1000)), 1)
    before = big.lines()
    big.apply_change("edit", (500, 0, 500, 4))
    assert big.lines()[500] == "edit 500\n" and big.lines()[10] is before[10] and big.lines()[900] is before[900]


def _apply_by_offsets(text: str, new: str, change: tuple[int, int, int, int]) -> tuple[str, str]:
    """The text a change makes, computed from the whole text's lines (as the document did before)."""
    from kvlint.fixing.model import line_offsets
    from kvlint.server.positions import offset_of

    lines = split_lines(text)
    starts = line_offsets(lines)
    start = offset_of(lines, starts, change[0], change[1])
    end = offset_of(lines, starts, change[2], change[3])
    return text[:start] + new + text[max(start, end):], new
