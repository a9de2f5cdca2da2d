"""`kvlint server` end to end: a real server process over stdio, driven by pygls' LSP client as an editor
drives it (`tests/support/lsp_session.py`). The workspace is `fixtures/server_workspace`, a vLLM-shaped package
whose executor aggregator has the seed bug, copied so that the tests can save files."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from lsprotocol import types

from tests.conftest import FIXTURES, ROOT, run_kvlint
from tests.support.lsp_session import Session, run

WORKSPACE = FIXTURES / "server_workspace"
GUARD = "            if out is None:\n                continue\n"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    shutil.copytree(WORKSPACE, root)
    (root / ".git").mkdir()  # the configuration search stops here
    return root


def test_the_workspace_fixture_is_reported_where_its_markers_say(workspace: Path) -> None:
    from tests.test_fixtures import EXPECT

    completed = run_kvlint("check", "--format", "json", ".", cwd=workspace)
    reported = sorted((item["path"], item["line"], item["code"]) for item in json.loads(completed.stdout))
    marked = sorted(
        (path.relative_to(workspace).as_posix(), number, match.group("codes"))
        for path in workspace.rglob("*.py")
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if (match := EXPECT.search(line))
    )
    assert reported == marked == [
        ("kvstack/aggregator.py", 19, "KVC001"), ("kvstack/aggregator.py", 21, "KVC001"),
        ("kvstack/scheduler.py", 10, "KVC001"),
    ]


def _check_ranges(root: Path, relative: str) -> list[tuple[str, int, int, int, int, str]]:
    """What `kvlint check --format json` reports for the file, as LSP ranges (UTF-16 columns, counted here)."""
    completed = run_kvlint("check", "--format", "json", ".", cwd=root)
    assert completed.returncode in (0, 1), completed.stderr
    lines = (root / relative).read_text().splitlines()

    def units(line: int, column: int) -> int:
        return len(lines[line - 1][: column - 1].encode("utf-16-le")) // 2

    return sorted(
        (item["code"], item["line"] - 1, units(item["line"], item["column"]),
         item["end_line"] - 1, units(item["end_line"], item["end_column"]), item["message"])
        for item in json.loads(completed.stdout) if item["path"] == relative
    )


def _ranges(diagnostics: list[types.Diagnostic]) -> list[tuple[str, int, int, int, int, str]]:
    return sorted(
        (str(d.code), d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character, d.message)
        for d in diagnostics
    )


def test_the_seed_bug_is_reported_as_kvlint_check_reports_it_and_the_guard_clears_it(workspace: Path) -> None:
    async def scenario() -> None:
        async with Session(workspace) as session:
            capabilities = session.initialize_result.capabilities
            assert capabilities.position_encoding == types.PositionEncodingKind.Utf16
            uri = session.open(workspace / "kvstack" / "aggregator.py")
            found = await session.diagnostics(uri)
            assert _ranges(found) == _check_ranges(workspace, "kvstack/aggregator.py")
            assert [(d.range.start.line, d.range.start.character, d.range.end.character) for d in found] == [
                (18, 26, 46), (20, 26, 46)  # `out.finished_sending`, `out.finished_recving`
            ]
            first = found[0]
            assert (first.code, first.source, first.severity) == ("KVC001", "kvlint", types.DiagnosticSeverity.Warning)
            docs = first.code_description.href
            assert docs.startswith("file://") and docs.endswith("#kvc001-unguarded-dereference")
            assert Path(docs.removeprefix("file://").partition("#")[0]).is_file()
            # the guard, typed into the buffer (not saved): the diagnostics clear
            guard = types.TextEdit(types.Range(types.Position(18, 0), types.Position(18, 0)), GUARD)
            version = session.edit(uri, [guard])
            assert await session.diagnostics(uri, version) == []
            assert "if out is None" not in (workspace / "kvstack" / "aggregator.py").read_text()

    run(scenario())


def test_typing_a_guard_key_by_key_ends_where_kvlint_check_does(workspace: Path) -> None:
    """A guard typed one character at a time, each keystroke its own `didChange` sent at once (the server
    re-analyses the one function, and the texts in between do not parse): the last diagnostics are what
    `kvlint check` reports for the final text, and the quick fixes are there for the finding left."""
    async def scenario() -> None:
        async with Session(workspace) as session:
            uri = session.open(workspace / "kvstack" / "aggregator.py")
            await session.until(lambda: any("indexed" in log.message for log in session.logs), "the tree index")
            assert len(await session.diagnostics(uri)) == 2
            typed = "            if out is None:\n                continue\n"
            line, column = 18, 0
            for char in typed:
                at = types.Position(line, column)
                version = session.edit(uri, [types.TextEdit(types.Range(at, at), char)])
                line, column = (line + 1, 0) if char == "\n" else (line, column + 1)
            assert await session.diagnostics(uri, version) == []
            edit = types.TextEdit(types.Range(types.Position(20, 26), types.Position(20, 46)), "out.finished_sending")
            found = await session.diagnostics(uri, session.edit(uri, [types.TextEdit(
                types.Range(types.Position(18, 0), types.Position(20, 0)), "")]))
            assert len(found) == 2
            final = await session.diagnostics(uri, session.edit(uri, [edit]))
            (workspace / "kvstack" / "aggregator.py").write_text(session.texts[uri])
            assert _ranges(final) == _check_ranges(workspace, "kvstack/aggregator.py")
            titles = [action.title for action in await session.code_actions(uri, final[0])]
            assert "Disable KVC001 for this line" in titles and any("Guard" in title for title in titles)
            assert not [log for log in session.logs if "internal error" in log.message]

    run(scenario())


def test_the_noqa_action_silences_the_line_and_the_file_rechecks_clean(workspace: Path) -> None:
    async def scenario() -> None:
        async with Session(workspace) as session:
            uri = session.open(workspace / "kvstack" / "aggregator.py")
            found = await session.diagnostics(uri)
            assert len(found) == 2
            guard_title = "Guard `out` with `if out is None: continue` (KVC001) (unsafe)"
            only_quick = await session.code_actions(uri, found[0], only=[types.CodeActionKind.QuickFix])
            assert [action.title for action in only_quick] == [guard_title, "Disable KVC001 for this line"]
            assert await session.code_actions(uri, found[0], only=[types.CodeActionKind.Refactor]) == []
            for remaining in (1, 0):
                actions = await session.code_actions(uri, found[0])
                assert [action.title for action in actions] == [guard_title, "Disable KVC001 for this line"]
                action = actions[1]
                assert action.kind == types.CodeActionKind.QuickFix
                assert [d.code for d in action.diagnostics] == ["KVC001"]
                version = session.apply(uri, action.edit)
                found = await session.diagnostics(uri, version)
                assert len(found) == remaining
            text = session.texts[uri]
            assert "out.finished_sending or ():  # expect: KVC001  # noqa: KVC001\n" in text
            # what an editor asks on save: nothing once clean
            assert await session.code_actions(uri, found[0] if found else types.Diagnostic(
                range=types.Range(types.Position(0, 0), types.Position(0, 0)), message=""),
                only=["source.fixAll.kvlint"]) == []
            assert "out.finished_recving or ():  # expect: KVC001  # noqa: KVC001\n" in text

    run(scenario())


def test_an_existing_noqa_comment_is_extended(workspace: Path) -> None:
    async def scenario() -> None:
        async with Session(workspace) as session:
            path = workspace / "kvstack" / "aggregator.py"
            text = path.read_text().replace("out.finished_sending or ():", "out.finished_sending or ():  # noqa: E501")
            uri = session.open(path, text)
            found = await session.diagnostics(uri)
            assert [d.range.start.line for d in found] == [18, 20]
            (action,) = [a for a in await session.code_actions(uri, found[0]) if a.title.startswith("Disable")]
            version = session.apply(uri, action.edit)
            assert len(await session.diagnostics(uri, version)) == 1
            assert "out.finished_sending or ():  # noqa: E501, KVC001  # expect: KVC001\n" in session.texts[uri]

    run(scenario())


def test_a_saved_change_to_a_helper_rechecks_the_open_files_that_call_it(workspace: Path) -> None:
    async def scenario() -> None:
        async with Session(workspace) as session:
            helpers = workspace / "kvstack" / "helpers.py"
            helper_uri = session.open(helpers)
            caller_uri = session.open(workspace / "kvstack" / "scheduler.py")
            # once the folder's index is built, the caller's dereference of `get_kvo(...)` is reported
            found = await session.diagnostics(caller_uri, where=lambda found: len(found) == 1)
            assert _ranges(found) == _check_ranges(workspace, "kvstack/scheduler.py")
            assert "get_kvo()" in found[0].message
            line = helpers.read_text().splitlines().index(
                "def get_kvo(output: ModelRunnerOutput) -> KVConnectorOutput | None:")
            start = len("def get_kvo(output: ModelRunnerOutput) -> KVConnectorOutput")
            not_optional = types.TextEdit(
                types.Range(types.Position(line, start), types.Position(line, start + len(" | None"))), ""
            )
            session.edit(helper_uri, [not_optional])
            session.save(helper_uri, helpers)
            assert await session.diagnostics(caller_uri, where=lambda found: not found) == []
            # and back: Optional again, saved, reported again
            optional = types.TextEdit(types.Range(types.Position(line, start), types.Position(line, start)), " | None")
            session.edit(helper_uri, [optional])
            session.save(helper_uri, helpers)
            found = await session.diagnostics(caller_uri, where=lambda found: len(found) == 1)
            assert _ranges(found) == _check_ranges(workspace, "kvstack/scheduler.py")

    run(scenario())


def test_the_unsaved_text_is_analysed_with_its_own_declarations(workspace: Path) -> None:
    """A buffer that declares the helper itself: changing its return annotation, unsaved, changes the report."""
    source = textwrap.dedent("""\
        from kvstack.outputs import KVConnectorOutput


        def local_kvo(output) -> KVConnectorOutput | None:
            return output.kv_connector_output


        def tally(output) -> int:
            return len(local_kvo(output).finished_sending or ())
    """)

    async def scenario() -> None:
        async with Session(workspace) as session:
            path = workspace / "kvstack" / "local.py"
            uri = session.open(path, source)  # never written to disk
            found = await session.diagnostics(uri, where=lambda found: len(found) == 1)
            assert found[0].code == "KVC001" and found[0].range.start.line == 8
            version = session.replace(uri, source.replace("-> KVConnectorOutput | None:", "-> KVConnectorOutput:"))
            assert await session.diagnostics(uri, version) == []
            assert not path.exists()

    run(scenario())


def test_a_syntax_error_is_kvc900_and_the_server_keeps_serving(workspace: Path) -> None:
    broken = "def merge(outputs):\n    for out in outputs\n        kvo = out.kv_connector_output\n"

    async def scenario() -> None:
        async with Session(workspace) as session:
            uri = session.open(workspace / "kvstack" / "broken.py", broken)
            (found,) = await session.diagnostics(uri)
            assert found.code == "KVC900" and found.severity == types.DiagnosticSeverity.Error
            assert (found.range.start.line, found.range.start.character) == (1, 22)  # where CPython puts it
            assert found.message.startswith("cannot parse:")
            assert session.returncode is None
            hover = await session.hover(uri, 1, 4)
            assert hover is not None and "unparsable-file" in hover.contents.value
            # the server goes on: the broken buffer mended, another document analysed
            version = session.replace(uri, broken.replace("in outputs\n", "in outputs:\n"))
            assert await session.diagnostics(uri, version) == []
            other = session.open(workspace / "kvstack" / "aggregator.py")
            assert len(await session.diagnostics(other)) == 2
        assert session.returncode == 0  # shutdown, then exit: a clean end

    run(scenario())


def test_documents_that_are_not_python_are_ignored(workspace: Path) -> None:
    async def scenario() -> None:
        async with Session(workspace) as session:
            notes = workspace / "NOTES.md"
            text = "for out in outputs:\n    out.kv_connector_output.finished_sending\n"
            notes_uri = session.open(notes, text, language_id="markdown")
            python_uri = session.open(workspace / "kvstack" / "aggregator.py")
            assert len(await session.diagnostics(python_uri)) == 2  # published after the markdown was opened
            assert notes_uri not in session.published
            assert await session.hover(notes_uri, 1, 10) is None
            actions = await session.code_actions(notes_uri, types.Diagnostic(
                range=types.Range(types.Position(1, 4), types.Position(1, 10)), message="x"))
            assert actions == []
            # a Python buffer never saved (no file behind it) is checked as `kvlint check -` checks stdin
            seed = "def merge(outputs):\n    for out in outputs:\n        out = out.kv_connector_output\n" \
                "        tally(out.finished_sending)\n"
            untitled = "untitled:Untitled-1"
            session.texts[untitled], session.versions[untitled] = seed, 1
            session.client.text_document_did_open(types.DidOpenTextDocumentParams(
                types.TextDocumentItem(uri=untitled, language_id="python", version=1, text=seed)))
            (found,) = await session.diagnostics(untitled)
            assert found.code == "KVC001" and found.range.start.line == 3

    run(scenario())


_FAULT = """
import sys
import kvlint.server.analysis as analysis

real = analysis.prepare_source


def faulty(text, *args, **kwargs):
    if "BOOM" in text:
        raise RuntimeError("injected fault")
    return real(text, *args, **kwargs)


analysis.prepare_source = faulty
from kvlint.server import main

sys.exit(main())
"""


def test_an_internal_error_in_one_document_is_logged_and_the_server_goes_on(workspace: Path) -> None:
    async def scenario() -> None:
        async with Session(workspace, command=[sys.executable, "-c", _FAULT]) as session:
            text = "def f(out):\n    return out.kv_connector_output.finished_sending  # BOOM\n"
            uri = session.open(workspace / "kvstack" / "boom.py", text)
            (found,) = await session.diagnostics(uri)
            assert found.code == "KVC902" and "injected fault" in found.message
            log = await session.until(
                lambda: [m for m in session.logs if "Traceback" in m.message and "injected fault" in m.message],
                "the traceback in the client's log",
            )
            assert log[0].type == types.MessageType.Error
            other = session.open(workspace / "kvstack" / "aggregator.py")
            assert len(await session.diagnostics(other)) == 2
            assert session.returncode is None
        assert session.returncode == 0

    run(scenario())


def test_columns_are_utf16_code_units_after_non_ascii_text(workspace: Path) -> None:
    """`é` is one UTF-16 unit, `😀` two: the range starts three units after kvlint's code-point column."""
    path = workspace / "kvstack" / "aggregator.py"
    text = path.read_text().replace(
        "            for req_id in out.finished_sending or ():",
        '            tag = "é😀"; sent = out.finished_sending\n            for req_id in sent or ():',
    )
    path.write_text(text)

    async def scenario(encodings: list[str], expected: int) -> None:
        async with Session(workspace, position_encodings=encodings) as session:
            uri = session.open(path)
            found = await session.diagnostics(uri)
            first = min(found, key=lambda d: d.range.start.line)
            assert first.range.start.line == 18
            assert (first.range.start.character, first.range.end.character) == (expected, expected + 20)
            hover = await session.hover(uri, 18, expected + 5)
            assert hover is not None and "finished_sending" in hover.contents.value

    code_points = len('            tag = "é😀"; sent = ')
    assert _check_ranges(workspace, "kvstack/aggregator.py")[0][2] == code_points + 1  # the emoji: two units
    run(scenario(["utf-16"], code_points + 1))
    run(scenario(["utf-32"], code_points))  # a client that counts code points gets them


def test_a_configuration_change_is_read_again(workspace: Path) -> None:
    async def scenario() -> None:
        async with Session(workspace) as session:
            uri = session.open(workspace / "kvstack" / "aggregator.py")
            assert len(await session.diagnostics(uri)) == 2
            assert session.registrations, "the server asks to watch pyproject.toml, setup.cfg and Python files"
            watched = [w["globPattern"] for r in session.registrations[0].registrations  # options arrive as JSON
                       for w in r.register_options["watchers"]]
            assert "**/pyproject.toml" in watched and "**/*.py" in watched
            pyproject = workspace / "pyproject.toml"
            pyproject.write_text(pyproject.read_text().replace('select = ["KVC"]', 'ignore = ["KVC001"]'))
            session.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
                changes=[types.FileEvent(uri=pyproject.as_uri(), type=types.FileChangeType.Changed)]
            ))
            assert await session.diagnostics(uri, where=lambda found: not found) == []
            pyproject.write_text(pyproject.read_text().replace('ignore = ["KVC001"]', "unknown-key = 1"))
            session.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
                changes=[types.FileEvent(uri=pyproject.as_uri(), type=types.FileChangeType.Changed)]
            ))
            shown = await session.until(lambda: session.shown, "the configuration error shown to the user")
            assert "unknown-key" in shown[0].message and shown[0].type == types.MessageType.Error
            assert session.returncode is None

    run(scenario())


def test_a_file_created_on_disk_reaches_the_open_files_that_call_it(workspace: Path) -> None:
    """A file the editor never opened (a `git checkout`, a generator) reported by the client's file watcher."""
    caller = textwrap.dedent("""\
        from kvstack.other_helpers import other_kvo


        def finished(output) -> set[str]:
            return set(other_kvo(output).finished_recving or ())
    """)
    helper = textwrap.dedent("""\
        from kvstack.outputs import KVConnectorOutput


        def other_kvo(output) -> KVConnectorOutput | None:
            return output.kv_connector_output
    """)

    async def scenario() -> None:
        async with Session(workspace) as session:
            caller_path = workspace / "kvstack" / "caller.py"
            caller_path.write_text(caller)
            uri = session.open(caller_path)
            await session.until(lambda: any("indexed" in log.message for log in session.logs), "the index")
            assert await session.diagnostics(uri) == []  # `other_kvo` is declared nowhere yet
            created = workspace / "kvstack" / "other_helpers.py"
            created.write_text(helper)
            session.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
                changes=[types.FileEvent(uri=created.as_uri(), type=types.FileChangeType.Created)]
            ))
            (found,) = await session.diagnostics(uri, where=lambda found: len(found) == 1)
            assert found.code == "KVC001" and "other_kvo()" in found.message
            created.unlink()
            session.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
                changes=[types.FileEvent(uri=created.as_uri(), type=types.FileChangeType.Deleted)]
            ))
            assert await session.diagnostics(uri, where=lambda found: not found) == []

    run(scenario())


def test_a_setup_cfg_configuration_is_read_and_read_again(workspace: Path) -> None:
    (workspace / "pyproject.toml").unlink()
    setup_cfg = workspace / "setup.cfg"
    setup_cfg.write_text("[kvlint]\nignore = KVC001\n")

    async def scenario() -> None:
        async with Session(workspace) as session:
            uri = session.open(workspace / "kvstack" / "aggregator.py")
            assert await session.diagnostics(uri) == []
            setup_cfg.write_text("[kvlint]\nselect = KVC\n")
            session.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
                changes=[types.FileEvent(uri=setup_cfg.as_uri(), type=types.FileChangeType.Changed)]
            ))
            assert len(await session.diagnostics(uri, where=lambda found: len(found) == 2)) == 2

    run(scenario())


def test_a_workspace_folder_added_later_gets_its_index(workspace: Path, tmp_path: Path) -> None:
    async def scenario() -> None:
        elsewhere = tmp_path / "started-here"
        elsewhere.mkdir()
        async with Session(elsewhere) as session:
            scheduler = session.open(workspace / "kvstack" / "scheduler.py")
            assert await session.diagnostics(scheduler) == []  # outside every folder: the file on its own
            session.client.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(
                event=types.WorkspaceFoldersChangeEvent(
                    added=[types.WorkspaceFolder(uri=workspace.as_uri(), name="workspace")], removed=[])
            ))
            found = await session.diagnostics(scheduler, where=lambda found: len(found) == 1)
            assert _ranges(found) == _check_ranges(workspace, "kvstack/scheduler.py")

    run(scenario())


def test_a_file_the_configuration_excludes_gets_no_diagnostics(workspace: Path) -> None:
    pyproject = workspace / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + 'exclude = ["aggregator.py"]\n')
    completed = run_kvlint("check", "kvstack/aggregator.py", cwd=workspace)
    assert completed.returncode == 0  # `kvlint check` skips it even when named

    async def scenario() -> None:
        async with Session(workspace) as session:
            excluded = session.open(workspace / "kvstack" / "aggregator.py")
            checked = session.open(workspace / "kvstack" / "scheduler.py")
            assert len(await session.diagnostics(checked, where=lambda found: len(found) == 1)) == 1
            assert await session.diagnostics(excluded) == []

    run(scenario())


def test_hover_on_a_diagnostic_shows_the_rules_explanation(workspace: Path) -> None:
    async def scenario() -> None:
        async with Session(workspace) as session:
            uri = session.open(workspace / "kvstack" / "aggregator.py")
            found = await session.diagnostics(uri)
            hover = await session.hover(uri, 18, 30)
            assert hover.contents.kind == types.MarkupKind.Markdown
            assert hover.range == found[0].range
            value = hover.contents.value
            assert "**KVC001**" in value and "### KVC001 (unguarded-dereference)" in value
            assert "**Why is this bad?**" in value and "```python" in value
            assert await session.hover(uri, 17, 0) is None  # no finding there

    run(scenario())


def test_without_the_server_extra_the_command_says_how_to_install_it() -> None:
    blocked = "import sys; sys.modules['pygls'] = None; from kvlint.cli import main; sys.exit(main(['server']))"
    completed = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert completed.returncode == 2
    assert completed.stdout == ""
    assert "pip install 'vllm-kvlint[server]'" in completed.stderr


IDLE_STEPS = '''"""Idle steps of a worker."""

from __future__ import annotations

from kvstack.outputs import EMPTY_MODEL_RUNNER_OUTPUT, KVConnectorOutput, ModelRunnerOutput


def idle_output(kvo: KVConnectorOutput) -> ModelRunnerOutput:
    output = EMPTY_MODEL_RUNNER_OUTPUT
    output.kv_connector_output = kvo
    return output


def finished(outputs: list[ModelRunnerOutput]) -> set[str]:
    done: set[str] = set()
    for out in outputs:
        kvo = out.kv_connector_output
        if kvo is None:
            continue
        for req_id in kvo.finished_sending:
            done.add(req_id)
    return done


def first_sending(out: ModelRunnerOutput) -> set[str] | None:
    kvo = out.kv_connector_output
    return kvo.finished_sending
'''


def test_a_quick_fix_applies_kvlints_own_fix_and_the_file_rechecks_clean(workspace: Path) -> None:
    """The seed bug's guard, offered as an unsafe quick fix (it changes what a None output does), applied."""
    async def scenario() -> None:
        async with Session(workspace) as session:
            uri = session.open(workspace / "kvstack" / "aggregator.py")
            found = await session.diagnostics(uri)
            assert [d.range.start.line for d in found] == [18, 20]
            actions = await session.code_actions(uri, found[0])
            (guard,) = [action for action in actions if not action.title.startswith("Disable")]
            assert guard.title == "Guard `out` with `if out is None: continue` (KVC001) (unsafe)"
            assert guard.kind == types.CodeActionKind.QuickFix and not guard.is_preferred
            version = session.apply(uri, guard.edit)
            assert await session.diagnostics(uri, version) == []  # one guard covers both dereferences
            assert "            out = out.kv_connector_output\n" + GUARD in session.texts[uri]

    run(scenario())


def test_fix_all_applies_the_safe_fixes_as_kvlint_check_fix_does(workspace: Path) -> None:
    """`source.fixAll.kvlint` on an unsaved buffer: the two safe fixes (a copy of the sentinel, `or ()`), not the
    unsafe guard; the buffer becomes what `kvlint check --fix` makes of the same file."""
    on_disk = workspace / "kvstack" / "idle.py"
    on_disk.write_text(IDLE_STEPS)
    completed = run_kvlint("check", "--fix", "--exit-zero", "kvstack/idle.py", cwd=workspace)
    assert "Found 3 findings (2 fixed, 1 remaining)." in completed.stdout, completed.stdout
    fixed_by_check = on_disk.read_text()
    on_disk.write_text(IDLE_STEPS)

    async def scenario() -> None:
        async with Session(workspace) as session:
            uri = session.open(on_disk)
            found = await session.diagnostics(uri)
            assert sorted(str(d.code) for d in found) == ["KVC001", "KVC004", "KVC005"]
            (fix_all,) = await session.code_actions(uri, found[0], only=["source.fixAll.kvlint"])
            assert fix_all.kind == "source.fixAll.kvlint"
            version = session.apply(uri, fix_all.edit)
            remaining = await session.diagnostics(uri, version)
            assert [str(d.code) for d in remaining] == ["KVC001"]
            assert session.texts[uri] == fixed_by_check
            assert "import copy" in fixed_by_check and "(kvo.finished_sending or ())" in fixed_by_check
            # nothing safe is left to fix
            assert await session.code_actions(uri, remaining[0], only=["source.fixAll.kvlint"]) == []
            assert on_disk.read_text() == IDLE_STEPS  # the server edits the buffer, never the file

    run(scenario())
