"""The editor face's parts, without a server process: positions, document changes, `# noqa` edits, fixes as
workspace edits, the packaged rule docs, and the tree index against the one `kvlint check` builds."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from lsprotocol import types

from kvlint.config import Config, load_config
from kvlint.source import split_lines
from kvlint.findings import Finding
from kvlint.fixing.model import Applicability, Edit, Fix, apply_fixes
from kvlint.noqa import is_suppressed, noqa_line_mapping
from kvlint.rules import RULE_DOCS_FILE, RULES, rule_docs_markdown
from kvlint.running.runner import index_tree, run
from kvlint.server.analysis import DocumentAnalysis, analyse_text
from kvlint.server.code_actions import quick_fixes, replacement, workspace_edit
from kvlint.server.diagnostics import diagnostic, hover_text, rule_docs_url
from kvlint.server.documents import Document, path_of
from kvlint.server.positions import UTF8, UTF16, UTF32, client_column, code_point_column, from_client, to_client
from kvlint.server.project import IndexedFile, ProjectIndex, index_key
from kvlint.server.suppression import noqa_edit
from tests.conftest import FIXTURES, ROOT

# ------------------------------------------------------------------ positions

LINE = 'x = "é😀"; kvo.finished_sending\n'  # é: 2 UTF-8 bytes, 1 UTF-16 unit; 😀: 4 bytes, 2 units


@pytest.mark.parametrize(("encoding", "expected"), [(UTF32, 10), (UTF16, 11), (UTF8, 14)])
def test_a_code_point_column_in_each_position_encoding(encoding: str, expected: int) -> None:
    column = LINE.index("kvo")
    assert column == 10
    assert client_column(LINE, column, encoding) == expected
    assert code_point_column(LINE, expected, encoding) == column


def test_positions_past_the_line_or_the_text_are_clamped() -> None:
    lines = split_lines("ab\r\ncd")
    assert code_point_column(lines[0], 99) == 2  # never into the line ending
    assert to_client(lines, 1, 99) == (0, 2)
    assert to_client(lines, 5, 0) == (1, 2)  # past the end of a text without a final newline: its end
    assert to_client(split_lines("ab\n"), 2, 0) == (1, 0)
    assert from_client(lines, 7, 0) == (3, 0)


def test_incremental_changes_follow_lsp_lines_and_utf16_units() -> None:
    """LSP lines end only at \\n, \\r\\n, \\r (a form feed or U+2028 is inside a line), as Python's tokenizer's."""
    document = Document("file:///w/a.py", 'a = "😀"; b\r\nc\x0cd = 1\u2028 e\nlast', 1)
    document.apply_change("B", (0, 10, 0, 11))  # after the emoji's two units
    assert document.text == 'a = "😀"; B\r\nc\x0cd = 1\u2028 e\nlast'
    document.apply_change("E", (1, 9, 1, 10))  # U+2028 is one unit of line 1, not a line break
    assert document.text == 'a = "😀"; B\r\nc\x0cd = 1\u2028 E\nlast'
    document.apply_change("!\n", (3, 0, 3, 0))  # the position after the end
    assert document.text.endswith("last!\n")
    document.apply_change("whole", None)
    assert document.text == "whole"


def test_only_python_documents_and_file_uris() -> None:
    assert Document("file:///w/a.py", "", 1, "python").is_python
    assert Document("file:///w/a.pyi", "", 1, "").is_python
    assert not Document("file:///w/a.md", "", 1, "markdown").is_python
    assert not Document("file:///w/a.py", "", 1, "cython").is_python
    assert path_of("file:///w/a%20b/%C3%A9.py") == Path("/w/a b/é.py")
    assert path_of("file:///w/%FF.py") == Path(os.fsdecode(b"/w/\xff.py"))  # a name that is not UTF-8
    assert path_of("untitled:Untitled-1") is None


# ------------------------------------------------------------- `# noqa` edits

def _apply(source: str, edit: Edit | None) -> str | None:
    if edit is None:
        return None
    return apply_fixes(source, split_lines(source), [Fix("noqa", Applicability.SAFE, (edit,))])[0]


@pytest.mark.parametrize(("source", "line", "expected"), [
    ("x = a.b\n", 1, "x = a.b  # noqa: KVC001\n"),
    ("x = a.b   \n", 1, "x = a.b  # noqa: KVC001\n"),
    ("x = a.b", 1, "x = a.b  # noqa: KVC001"),
    ("x = a.b  # noqa: E501\n", 1, "x = a.b  # noqa: E501, KVC001\n"),
    ("x = a.b  # NOQA:E501,W291 \n", 1, "x = a.b  # NOQA:E501,W291, KVC001 \n"),
    ("x = a.b  # type: ignore\n", 1, "x = a.b  # type: ignore  # noqa: KVC001\n"),
    ("x = f('''\nabc\n''', a.b)\ny = 2\n", 2, "x = f('''\nabc\n''', a.b)  # noqa: KVC001\ny = 2\n"),
    ("x = a.b + \\\n  c\n", 1, "x = a.b + \\\n  c  # noqa: KVC001\n"),
    ("foo(\n  a.b,\n)\n", 2, "foo(\n  a.b,  # noqa: KVC001\n)\n"),
    ("s = '# noqa: E501'; a.b\n", 1, "s = '# noqa: E501'; a.b  # noqa: KVC001\n"),  # never inside a string
    ("x = a.b  # noqa\n", 1, None),  # a blanket noqa silences it already
    ("x = a.b  # noqa: KVC0\n", 1, None),
])
def test_the_noqa_edit(source: str, line: int, expected: str | None) -> None:
    fixed = _apply(source, noqa_edit(split_lines(source), line, "KVC001"))
    assert fixed == expected
    if fixed is not None and "'# noqa" not in source:
        assert is_suppressed(noqa_line_mapping(split_lines(fixed))[line], "KVC001")


def test_the_noqa_edit_of_a_file_that_does_not_tokenize() -> None:
    source = "def f(:\n    x.y\n"
    assert _apply(source, noqa_edit(split_lines(source), 1, "KVC900")) == "def f(:  # noqa: KVC900\n    x.y\n"
    assert noqa_edit(split_lines("x = (\\\n"), 1, "KVC900") is None  # no comment can follow a continuation


# -------------------------------------------------------------- fixes as edits

def _analysis(text: str, findings: tuple[Finding, ...] = ()) -> DocumentAnalysis:
    return DocumentAnalysis("file:///w/step.py", 7, text, findings, Config(), lines=split_lines(text))


def test_a_fix_becomes_a_versioned_workspace_edit_in_utf16_units() -> None:
    text = 'def step(out):  # é😀\n    tag = "😀"; return EMPTY_MODEL_RUNNER_OUTPUT\n'
    column = text.splitlines()[1].index("EMPTY")
    edits = (
        Edit(2, column, 2, column + len("EMPTY_MODEL_RUNNER_OUTPUT"), "copy.copy(EMPTY_MODEL_RUNNER_OUTPUT)"),
        Edit(1, 0, 1, 0, "import copy\n"),
    )
    edit = workspace_edit("file:///w/step.py", 7, split_lines(text), edits)
    (change,) = edit.document_changes
    assert change.text_document == types.OptionalVersionedTextDocumentIdentifier(uri="file:///w/step.py", version=7)
    assert [(e.range.start.line, e.range.start.character, e.range.end.line, e.range.end.character, e.new_text)
            for e in change.edits] == [
        (0, 0, 0, 0, "import copy\n"),
        (1, column + 1, 1, column + 1 + 25, "copy.copy(EMPTY_MODEL_RUNNER_OUTPUT)"),  # the emoji: two units
    ]
    plain = workspace_edit("file:///w/step.py", 7, split_lines(text), edits, document_changes=False)
    assert plain.document_changes is None and len(plain.changes["file:///w/step.py"]) == 2


def test_a_multi_line_edit_keeps_both_ends() -> None:
    text = "def step():\n    x = 'é'\n    return EMPTY_MODEL_RUNNER_OUTPUT\n"
    edit = workspace_edit("file:///w/step.py", 1, split_lines(text), [Edit(2, 9, 3, 10, "")], UTF8)
    (text_edit,) = edit.document_changes[0].edits
    assert (text_edit.range.start.line, text_edit.range.start.character) == (1, 9)
    assert (text_edit.range.end.line, text_edit.range.end.character) == (2, 10)
    edit16 = workspace_edit("file:///w/step.py", 1, split_lines(text), [Edit(2, 9, 3, 10, "")])
    assert edit16.document_changes[0].edits[0].range.start.character == 9


def test_one_quick_fix_per_finding_with_a_fix_unsafe_in_its_title() -> None:
    text = "def step(kvo):\n    return EMPTY_MODEL_RUNNER_OUTPUT\n"
    safe = Fix("Return a copy with `kv_connector_output` set", Applicability.SAFE, (Edit(2, 11, 2, 36, "out"),))
    unsafe = Fix("Check for None first", Applicability.UNSAFE, (Edit(2, 0, 2, 0, "    assert kvo\n"),))
    findings = (
        Finding("step.py", 2, 11, "KVC002", "m2", 2, 36, fix=safe),
        Finding("step.py", 2, 4, "KVC001", "m1", 2, 10, fix=unsafe),
        Finding("step.py", 2, 4, "KVC006", "m6", 2, 10),  # no fix: only the noqa action
    )
    actions = quick_fixes(_analysis(text, findings), findings)
    assert [(a.title, a.is_preferred) for a in actions] == [
        ("Return a copy with `kv_connector_output` set (KVC002)", True),
        ("Disable KVC002 for this line", None),
        ("Check for None first (KVC001) (unsafe)", False),
        ("Disable KVC001 for this line", None),
        ("Disable KVC006 for this line", None),
    ]
    assert all(a.kind == types.CodeActionKind.QuickFix for a in actions)
    assert [d.code for d in actions[2].diagnostics] == ["KVC001"]


@pytest.mark.parametrize(("old", "new"), [
    ("abc\ndef\n", "abc\nxyz\n"), ("abc", "abcd"), ("abcd", "abc"), ("", "x\n"), ("x\n", ""),
    ("a\r\nb\r\n", "a\r\nc\r\nb\r\n"), ("é😀\nz", "é😀\nzz"),
])
def test_the_replacement_edit_turns_one_text_into_the_other(old: str, new: str) -> None:
    edit = replacement(old, new, split_lines(old))
    assert apply_fixes(old, split_lines(old), [Fix("all", Applicability.SAFE, (edit,))])[0] == new


@pytest.mark.parametrize(("only", "kind", "wanted"), [
    ([types.CodeActionKind.QuickFix], types.CodeActionKind.QuickFix, True),
    ([types.CodeActionKind.Source], "source.fixAll.kvlint", True),
    ([types.CodeActionKind.SourceFixAll], "source.fixAll.kvlint", True),
    (["source.fixAll.kvlint"], "source.fixAll.kvlint", True),
    (["source.fixAll.kvlint"], types.CodeActionKind.QuickFix, False),
    ([types.CodeActionKind.QuickFix], "source.fixAll.kvlint", False),
    ([types.CodeActionKind.Refactor], types.CodeActionKind.QuickFix, False),
])
def test_the_kinds_a_code_action_request_asks_for(only: list[str], kind: str, wanted: bool) -> None:
    from kvlint.server.language_server import _wants

    assert _wants(only, kind) is wanted


# ------------------------------------------------------------ diagnostics, docs

def test_a_diagnostic_carries_the_finding_as_kvlint_check_prints_it() -> None:
    text = 'é😀 = out.kv_connector_output.finished_sending\n'
    finding = Finding("a.py", 1, 3, "KVC001", "`out.kv_connector_output` may be None", 1, 44)
    shown = diagnostic(finding, split_lines(text))
    assert (shown.range.start.character, shown.range.end.character) == (4, 45)
    assert (shown.code, shown.source, shown.message) == ("KVC001", "kvlint", finding.message)
    assert shown.code_description.href == rule_docs_url("KVC001")
    assert rule_docs_url("KVC002", "https://docs.example/kvlint/{code}.html#{name}") == (
        "https://docs.example/kvlint/KVC002.html#empty-output-on-connector-path"
    )


def test_the_packaged_rule_docs_are_generated_from_the_registry() -> None:
    packaged = ROOT / "kvlint" / "rules" / RULE_DOCS_FILE
    assert packaged.read_text() == rule_docs_markdown(), "regenerate kvlint/rules/rules.md"
    for code, rule in RULES.items():
        assert f"## {code} ({rule.name})" in packaged.read_text()
        url = rule_docs_url(code)
        assert url.endswith(f"#{code.lower()}-{rule.name}")
        assert Path(url.removeprefix("file://").partition("#")[0]) == packaged


def test_hover_text_is_the_message_and_the_explanation() -> None:
    findings = [Finding("a.py", 1, 0, "KVC004", "`EMPTY_MODEL_RUNNER_OUTPUT.x = 1` [mutates] *it*", 1, 5)]
    markdown = hover_text(findings)
    assert markdown.startswith("**KVC004** `EMPTY_MODEL_RUNNER_OUTPUT.x = 1` \\[mutates\\] \\*it\\*")
    assert RULES["KVC004"].markdown("### ") in markdown
    plain = hover_text(findings, markdown=False)
    assert RULES["KVC004"].documentation() in plain and "**" not in plain.splitlines()[0]


# ----------------------------------------------- the tree index and the analyses

@pytest.mark.parametrize("area", ["vllm_like", "realistic", "realistic_ec", "binding/project"])
def test_the_folder_index_is_the_one_kvlint_check_builds(area: str) -> None:
    root = FIXTURES / area
    config = load_config([root])
    project = ProjectIndex(root, config)
    project.build()
    assert index_key(project.index) == index_key(index_tree([root], config)[0])


def _findings_of(root: Path, config: Config) -> dict[str, list[tuple[object, ...]]]:
    """What `kvlint check ROOT` reports, per absolute path, without the path."""
    found: dict[str, list[tuple[object, ...]]] = {}
    for f in run([root], config, jobs=1).findings:
        found.setdefault(os.path.abspath(f.path), []).append((f.line, f.column, f.code, f.message, f.end_line,
                                                              f.end_column))
    return found


@pytest.mark.parametrize("area", [
    "vllm_like", "realistic", "realistic_b", "realistic_ec", "tests_policy", "binding/project",
])
def test_each_buffer_is_analysed_as_kvlint_check_reports_the_file(
    area: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = FIXTURES / area
    monkeypatch.chdir(FIXTURES.parent)
    config = load_config([root])
    expected = _findings_of(root, config)
    project = ProjectIndex(root, config)
    project.build()
    for path in sorted(root.rglob("*.py")):
        text = path.read_bytes().decode("utf-8")
        analysis = analyse_text(path.as_uri(), 1, text, path, config, project)
        got = [(f.line, f.column, f.code, f.message, f.end_line, f.end_column) for f in analysis.findings]
        assert got == expected.get(str(path), []), path


def test_a_skipped_caller_s_buffer_is_guarded_by_what_its_imports_bring() -> None:
    """The binder project's request finisher mentions no configured name: the folder's index reads its
    imports once the scan finds it a caller, so the `NoReturn` helper only it calls guards its accesses."""
    root = FIXTURES / "binding" / "project"
    config = load_config([root])
    project = ProjectIndex(root, config)
    project.build()
    path = root / "kv_project" / "request_finisher.py"
    analysis = analyse_text(path.as_uri(), 1, path.read_text(encoding="utf-8"), path, config, project)
    assert [(f.line, f.code) for f in analysis.findings] == [(21, "KVC001")]


def test_a_buffer_that_declares_the_same_uses_the_folders_index(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    shutil.copytree(FIXTURES / "server_workspace", root)
    config = load_config([root])
    project = ProjectIndex(root, config)
    project.build()
    helpers = root / "kvstack" / "helpers.py"
    body_edit = helpers.read_text().replace("return output.kv_connector_output", "return (output.kv_connector_output)")
    assert project.index_for(IndexedFile.of(body_edit, helpers, config)) is project.index
    # a changed declaration: the index with the buffer in the file's place, as `kvlint check` builds it once saved
    changed = helpers.read_text().replace("-> KVConnectorOutput | None:", "-> KVConnectorOutput:")
    overlay = project.index_for(IndexedFile.of(changed, helpers, config))
    assert overlay is not project.index
    assert project.index_for(IndexedFile.of(changed, helpers, config)) is overlay  # kept for the next keystroke
    typed = changed.replace("return output.kv_connector_output", "return output.kv_connector_output  # typed")
    assert project.index_for(IndexedFile.of(typed, helpers, config)) is overlay  # declares what it declared
    helpers.write_text(changed)
    assert index_key(overlay) == index_key(index_tree([root], config)[0])
    assert project.update([helpers]) is True
    assert index_key(project.index) == index_key(overlay)
    assert project.update([helpers]) is False  # nothing new


@pytest.mark.parametrize("follow", [False, True])  # a publish, and a request that needs an answer (a hover)
def test_an_analysis_the_index_outdates_while_it_runs_is_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, follow: bool
) -> None:
    """The folder's index is built while a document's analysis runs without it: the re-check it asks for
    analyses the document again, and the stale analysis is neither kept nor published. Kept, it was the
    re-check's answer, and `scheduler.py` showed no finding until its next edit (a test under load saw two
    empty publishes where the index gives one KVC001)."""
    import asyncio
    import threading

    from kvlint.server import language_server

    root = tmp_path / "ws"
    shutil.copytree(FIXTURES / "server_workspace", root)
    (root / ".git").mkdir()  # the configuration search stops here
    scheduler = root / "kvstack" / "scheduler.py"
    uri = scheduler.as_uri()
    server = language_server.KvlintLanguageServer()
    server.folders = [root]
    project = server.projects[str(root)] = ProjectIndex(root, load_config([root]))
    server.documents[uri] = Document(uri, scheduler.read_text(), 1, "python")
    running, go_on = threading.Event(), threading.Event()
    analysed_with: list[bool] = []  # whether each analysis had the folder's index
    real_analysis = language_server.analyse_text

    def analyse(*args: object, **kwargs: object) -> DocumentAnalysis:
        analysed_with.append(project.index is not None)
        if len(analysed_with) == 1:
            running.set()
            assert go_on.wait(30)
        return real_analysis(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(language_server, "analyse_text", analyse)
    rechecked: list[str] = []
    monkeypatch.setattr(server, "schedule", lambda uri, delay=0.0: rechecked.append(uri))

    async def scenario() -> DocumentAnalysis | None:
        first = asyncio.ensure_future(server.analysis(uri, follow=follow))
        assert await asyncio.get_running_loop().run_in_executor(None, running.wait, 30)
        project.build()  # what `build` does on the index thread, then its re-check of the open documents
        server.recheck([uri])
        go_on.set()
        answer = await first
        if not follow:
            assert answer is None  # outdated: the re-check publishes
            assert uri not in server.analyses
            answer = await server.analysis(uri)
        return answer

    try:
        answer = asyncio.run(scenario())
    finally:
        go_on.set()
        server.analysis_thread.shutdown()
    assert rechecked == [uri]
    assert analysed_with == [False, True]
    assert answer is not None and server.analyses[uri] is answer
    assert [(f.line, f.code) for f in answer.findings] == [(10, "KVC001")]


def test_a_file_the_walk_would_skip_never_enters_the_index(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    shutil.copytree(FIXTURES / "server_workspace", root)
    project = ProjectIndex(root, load_config([root]))
    project.build()
    for skipped in (root / ".venv" / "lib" / "x.py", root / "build" / "lib" / "kvstack" / "helpers.py",
                    root / "kvstack" / "notes.txt"):
        skipped.parent.mkdir(parents=True, exist_ok=True)
        skipped.write_text("from kvstack.outputs import KVConnectorOutput\ndef get_kvo() -> KVConnectorOutput: ...\n")
        assert not project.covers(skipped)
        assert project.update([skipped]) is False
    assert project.covers(root / "kvstack" / "helpers.py")
    assert index_key(project.index) == index_key(index_tree([root], load_config([root]))[0])


def test_an_analysis_that_fails_is_a_kvc902_with_its_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    import kvlint.server.analysis as analysis_module

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(analysis_module, "full_analysis", broken)
    text = "def f(out):\n    return out.kv_connector_output.finished_sending\n"
    analysis = analyse_text("file:///w/f.py", 3, text, Path("/w/f.py"), Config(), None)
    (finding,) = analysis.findings
    assert finding.code == "KVC902" and "RuntimeError: boom" in finding.message
    assert "Traceback" in analysis.traceback and analysis.version == 3


@pytest.mark.vllm
@pytest.mark.parametrize("release", ["0.10.1", "0.33.0"])  # the seed bug's release (two KVC002), the newest
def test_on_vllm_every_buffer_is_reported_as_kvlint_check_reports_its_file(
    release: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real vLLM: the folder's index is `kvlint check`'s, and each file kvlint reads (the byte scan's
    and the callers of Optional-returning functions), opened as a buffer, gets exactly its file's findings."""
    from kvlint.byte_scan import mentions_any
    from kvlint.server.project import caller_names
    from tests.support.vllm_sources import vllm_tree

    root = vllm_tree(release)
    monkeypatch.chdir(root)
    config = load_config([root])
    project = ProjectIndex(root, config)
    project.build()
    assert index_key(project.index) == index_key(index_tree([root], config)[0])
    expected = _findings_of(root, config)
    callers = caller_names(project.index, config)
    read = [path for path, file in project.files.items() if file.scanned or mentions_any(file.data, callers)]
    assert len(read) > 20 and set(expected) <= set(read)
    assert release != "0.10.1" or sum(map(len, expected.values())) >= 2
    for path in sorted(read):
        text = Path(path).read_bytes().decode("utf-8")
        analysis = analyse_text(Path(path).as_uri(), 1, text, Path(path), config, project)
        got = [(f.line, f.column, f.code, f.message, f.end_line, f.end_column) for f in analysis.findings]
        assert got == expected.get(path, []), path
