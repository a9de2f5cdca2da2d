"""The producer -> field -> consumer graph of an audit, which the mermaid and dot formats (and markdown) draw.

Nothing here analyses code: the graph only groups the inventory by function, the functions by package (directory)
and module, and folds the functions of test files into one node per test directory unless asked not to.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvlint.report.audit import AuditReport


@dataclass
class _GraphNode:
    """A function, as a producer or as a consumer of outputs; or, folded, every such function of a test directory."""

    path: str  # the function's file; a folded node's directory
    function: str  # "" for a folded node
    edges: dict[tuple[str, str], int] = field(default_factory=dict)  # (hub key, edge label) -> count
    edge_status: dict[tuple[str, str], str] = field(default_factory=dict)  # (hub key, edge label) -> status
    status: str = "off"  # "bad", "quiet", "ok", "copy" or "off"
    test: bool = False  # in a test file (a folded node: of test files)
    functions: int = 1  # a folded node: how many functions, in how many files
    files: int = 1

    @property
    def folded(self) -> bool:
        return not self.function


# Producer edges (label, status) and consumer edges, worst first so that a node takes its worst status.
_PRODUCER_EDGES = {
    "returns the sentinel on a connector path": "bad",
    "mutates the shared sentinel": "bad",
    "built without it on a connector path": "bad",
    "drops the connector output it holds": "bad",
    "parks it on a holder no caller reads": "bad",
    "built with it": "ok",
    "attaches a connector output": "ok",
    "copy of the sentinel": "copy",
    "returns the sentinel, its output empty": "copy",
    "built without it, off path": "off",
    "returns the sentinel, off path": "off",
    "unknown (**kwargs)": "off",
    "attaches a maybe-None value": "off",
}


_CONSUMER_EDGES = {
    "unguarded dereference": "bad",
    "guarded dereference": "ok",
    "read, passed on or checked": "off",
}


# The rules whose finding an edge of status "bad" stands for: without such a finding of its function (the
# test-code policy, a `# noqa`, a baseline, `--ignore` left it out) the edge is "quiet", not red.
_FINDING_CODES = {
    "returns the sentinel on a connector path": ("KVC002",),
    "mutates the shared sentinel": ("KVC004",),
    "built without it on a connector path": ("KVC003",),
    "drops the connector output it holds": ("KVC006",),
    "parks it on a holder no caller reads": ("KVC006",),
    "unguarded dereference": ("KVC001", "KVC005"),
}


_RANK = {"bad": 0, "quiet": 1, "ok": 2, "copy": 3, "off": 4}


def _worst(statuses) -> str:  # type: ignore[no-untyped-def]
    return min(statuses, key=_RANK.__getitem__)


@dataclass
class ConnectorGraph:
    """Producing and consuming functions of outputs, meeting at the field they pass through (the hub).

    The static facts say what each function does with the field, not which output reaches which reader
    (kvlint has no inter-procedural flow), so a producer feeds a consumer exactly when both touch the same
    hub: every output a producer builds may reach every reader of that field. Nodes are drawn grouped by
    package, then module. Each invariant's field is a hub of its own (`ModelRunnerOutput.kv_connector_output`,
    `ModelRunnerOutput.ec_connector_output`); a function that touches both has edges to both.
    """

    hubs: dict[str, str]  # hub key -> label
    producers: list[_GraphNode]
    consumers: list[_GraphNode]
    prefix: str = ""  # the directory shared by every function's file, left out of the labels

    def common_prefix(self) -> str:
        return self.prefix


def _common_prefix(paths: list[str]) -> str:
    """The directory shared by the files, with a trailing `/`; a single file's directory."""
    if not paths:
        return ""
    prefix = posixpath.commonpath(paths) if len(set(paths)) > 1 else posixpath.dirname(paths[0])
    if prefix in paths:  # a single file: keep its name
        prefix = posixpath.dirname(prefix)
    return prefix + "/" if prefix else ""


def package_of(path: str) -> str:
    """The package (directory) a module lies in: `vllm/v1/worker/gpu_model_runner.py` -> `vllm/v1/worker`."""
    return posixpath.dirname(path)


def grouped(nodes: list[_GraphNode]) -> list[tuple[str, list[tuple[str, list[_GraphNode]]]]]:
    """Nodes by package (directory), then by module (file), in a stable order; folded nodes are left out."""
    packages: dict[str, dict[str, list[_GraphNode]]] = {}
    drawn = (node for node in nodes if not node.folded)
    for node in sorted(drawn, key=lambda node: (package_of(node.path), node.path, node.function)):
        packages.setdefault(package_of(node.path), {}).setdefault(node.path, []).append(node)
    return [(package, list(modules.items())) for package, modules in packages.items()]


def _drawn_invariants(report: AuditReport) -> list[str]:
    """The invariants the graph draws a hub for: those with a site of their own in the tree (a read or write
    of their field, a payload construction, a dereference, a guard or context). Output constructions and
    returns of a sentinel that invariants share are no reason alone: vLLM 0.10 has no encoder-cache field."""
    own = {
        entry.invariant
        for entries in (report.connector_output_accesses, report.connector_output_writes,
                        report.payload_constructions, report.dereferences, report.connector_scopes)
        for entry in entries
    }
    return [invariant.name for invariant in report.invariants if invariant.name in own]


def connector_graph(report: AuditReport, tests: str = "fold") -> ConnectorGraph:
    """Group the inventory by function into producer and consumer nodes, each edge through its invariant's hub.

    An edge that breaks the invariant is "bad" (red) only where the report holds the finding it stands for, in
    that function; otherwise "quiet". With `tests="fold"`, the functions of test files become one node per test
    directory and side, with their edges added up."""
    drawn = _drawn_invariants(report)
    producers: dict[tuple[str, str], _GraphNode] = {}
    consumers: dict[tuple[str, str], _GraphNode] = {}

    def add(nodes: dict[tuple[str, str], _GraphNode], hub: str, position, function: str,  # type: ignore[no-untyped-def]
            label: str) -> None:
        if hub not in drawn:
            return
        new = _GraphNode(position.path, function, test=position.test_file)
        node = nodes.setdefault((position.path, function), new)
        node.edges[(hub, label)] = node.edges.get((hub, label), 0) + 1

    for c in report.output_constructions:
        if c.carries_connector_output is None:
            label = "unknown (**kwargs)"
        elif c.carries_connector_output:
            label = "built with it"
        elif c.on_connector_path:
            label = "built without it on a connector path"
        else:
            label = "built without it, off path"
        add(producers, c.invariant, c.position, c.function, label)
    for u in report.sentinel_uses:
        if u.use == "returned" and u.allowed_empty:
            label = "returns the sentinel, its output empty"
        elif u.use == "returned":
            label = ("returns the sentinel on a connector path" if u.on_connector_path
                     else "returns the sentinel, off path")
        elif u.use == "copied":
            label = "copy of the sentinel"
        elif u.use == "mutated":
            label = "mutates the shared sentinel"
        else:
            continue  # an alias is followed to its return or mutation
        add(producers, u.invariant, u.position, u.function, label)
    for d in report.dropped_kv_outputs:
        if d.dropped_by:
            label = "parks it on a holder no caller reads"
        elif d.parked_on:
            label = f"stores it on {d.parked_on.partition(' ')[0]}, which nothing reads"
        else:
            label = "drops the connector output it holds"
        add(producers, d.invariant, d.position, d.function, label)
    for w in report.connector_output_writes:
        label = "attaches a maybe-None value" if w.may_be_none else "attaches a connector output"
        add(producers, w.invariant, w.position, w.function, label)
    readers = {(a.invariant, a.position.path, a.function): a.position for a in report.connector_output_accesses}
    for d in report.dereferences:
        key = (d.invariant, d.position.path, d.function)
        if not d.guarded:
            add(consumers, d.invariant, d.position, d.function, "unguarded dereference")
        elif key in readers:
            add(consumers, d.invariant, d.position, d.function, "guarded dereference")
    for (hub, path, function), position in sorted(readers.items()):
        node = consumers.get((path, function))
        if node is None or not any(key[0] == hub for key in node.edges):
            add(consumers, hub, position, function, "read, passed on or checked")
    found = {(f.path, f.function, f.invariant, f.code) for f in report.findings}
    for nodes, ranks in ((producers, _PRODUCER_EDGES), (consumers, _CONSUMER_EDGES)):
        for node in nodes.values():
            for hub, label in node.edges:
                status = ranks[label]
                if status == "bad" and not any((node.path, node.function, hub, code) in found
                                               for code in _FINDING_CODES[label]):
                    status = "quiet"
                node.edge_status[(hub, label)] = status
    prefix = _common_prefix([node.path for node in (*producers.values(), *consumers.values())])
    sides = [list(producers.values()), list(consumers.values())]
    if tests == "fold":
        sides = [_folded(nodes) for nodes in sides]
    order = [*_PRODUCER_EDGES, *_CONSUMER_EDGES]
    rank = lambda item: (drawn.index(item[0][0]), order.index(item[0][1]))  # noqa: E731
    for nodes in sides:
        for node in nodes:
            node.status = _worst(node.edge_status.values())
            node.edges = dict(sorted(node.edges.items(), key=rank))
    by_name = {invariant.name: invariant for invariant in report.invariants}
    hubs = {name: " / ".join(by_name[name].output_classes) + "." + " / ".join(by_name[name].optional_fields)
            for name in drawn}
    position = lambda node: (node.folded, node.path, node.function)  # noqa: E731
    return ConnectorGraph(hubs, sorted(sides[0], key=position), sorted(sides[1], key=position), prefix)


def _folded(nodes: list[_GraphNode]) -> list[_GraphNode]:
    """The nodes of test files replaced by one node per directory, holding the sum of their edges."""
    kept: list[_GraphNode] = []
    folds: dict[str, _GraphNode] = {}
    files: dict[str, set[str]] = {}
    for node in nodes:
        if not node.test:
            kept.append(node)
            continue
        directory = package_of(node.path)
        fold = folds.get(directory)
        if fold is None:
            fold = folds[directory] = _GraphNode(directory, "", test=True, functions=0)
        fold.functions += 1
        files.setdefault(directory, set()).add(node.path)
        for key, count in node.edges.items():
            fold.edges[key] = fold.edges.get(key, 0) + count
            fold.edge_status[key] = _worst((fold.edge_status.get(key, "off"), node.edge_status[key]))
    for directory, fold in folds.items():
        fold.files = len(files[directory])
    return [*kept, *folds.values()]


# status -> (fill, stroke): breaks the invariant (a finding), breaks it unreported, keeps it, copies the sentinel
# (attaches later?), off the path
_COLOURS = {"bad": ("#fde2e1", "#c62828"), "quiet": ("#fdf0dc", "#b26a00"), "ok": ("#e3f4e1", "#2e7d32"),
            "copy": ("#e3ecfa", "#1f4e99"), "off": ("#f1f1f1", "#8a8a8a")}


GRAPH_LEGEND = (
    "red: breaks the invariant (a kvlint finding) · orange, dotted: breaks it where kvlint reports nothing "
    "(test code, noqa, baseline)",
    "green: carries its connector output, or dereferences it guarded · blue: copies the empty sentinel (a write "
    "may then attach the output) · grey, dashed: off the connector path, or read without a dereference",
)


def _edge_label(label: str, count: int) -> str:
    return f"{label} ×{count}" if count > 1 else label


_SIDES = (("p", "producers: build or return an output"), ("c", "consumers: read a connector output"))
TEST_CLUSTER = "test code: one node per directory (--graph-tests=expand draws each function)"


def _folded_label(node: _GraphNode, prefix: str) -> str:
    directory = node.path + "/"
    shown = directory[len(prefix):] if directory.startswith(prefix) and directory != prefix else directory
    functions = f"{node.functions} function{'s' if node.functions != 1 else ''}"
    return f"{shown} · {functions} in {node.files} file{'s' if node.files != 1 else ''}"


@dataclass(frozen=True)
class _Drawn:
    """What both graph formats draw, in order: clusters opening and closing, nodes, then the edges."""

    # (kind: "open"/"close"/"node", depth, ident, label, status); an "open" line's status is the cluster's kind:
    # "side", "package", "module" or "tests"
    lines: list[tuple[str, int, str, str, str]]
    # (source, target, labels, status): one edge per node and hub, a label line for each thing the function does
    # to the field (`built with it ×2`), its status the worst of theirs
    edges: list[tuple[str, str, tuple[str, ...], str]]
    hubs: dict[str, str]  # ident -> label


def _drawn(report: AuditReport, tests: str = "fold") -> _Drawn:
    """Lay the graph out once: a cluster per side; inside it a cluster per package, and per module inside that
    (a package of one module is one cluster, named by the module's path); then the folded test directories."""
    graph = connector_graph(report, tests)
    prefix = graph.common_prefix()
    shorten = lambda path: path[len(prefix):] if path.startswith(prefix) else path  # noqa: E731
    hub_ids = {key: f"h{number}" for number, key in enumerate(graph.hubs, start=1)}
    lines: list[tuple[str, int, str, str, str]] = []
    edges: list[tuple[str, str, tuple[str, ...], str]] = []
    for (side, title), nodes in zip(_SIDES, (graph.producers, graph.consumers)):
        lines.append(("open", 1, side, title, "side"))
        count = 0

        def node_line(node: _GraphNode, depth: int, label: str) -> None:
            nonlocal count
            count += 1
            ident = f"{side}{count}"
            lines.append(("node", depth, ident, label, node.status))
            for hub in graph.hubs:  # one edge per node and hub, saying each thing the function does there
                facts = [(edge_label, times) for (key, edge_label), times in node.edges.items() if key == hub]
                if not facts:
                    continue
                pair = (ident, hub_ids[hub]) if side == "p" else (hub_ids[hub], ident)
                status = _worst(node.edge_status[(hub, edge_label)] for edge_label, _ in facts)
                edges.append((*pair, tuple(_edge_label(*fact) for fact in facts), status))

        for package_number, (package, modules) in enumerate(grouped(nodes), start=1):
            cluster = f"{side}_g{package_number}"
            alone = len(modules) == 1
            if not alone:
                lines.append(("open", 2, cluster, shorten(package + "/") or package + "/", "package"))
            for module_number, (path, members) in enumerate(modules, start=1):
                depth = 2 if alone else 3
                label = shorten(path) if alone else posixpath.basename(path)
                lines.append(("open", depth, f"{cluster}_m{module_number}", label, "module"))
                for node in members:
                    node_line(node, depth + 1, node.function)
                lines.append(("close", depth, "", "", ""))
            if not alone:
                lines.append(("close", 2, "", "", ""))
        folds = [node for node in nodes if node.folded]
        if folds:
            lines.append(("open", 2, f"{side}_tests", TEST_CLUSTER, "tests"))
            for node in folds:
                node_line(node, 3, _folded_label(node, prefix))
            lines.append(("close", 2, "", "", ""))
        lines.append(("close", 1, "", "", ""))
    return _Drawn(lines, edges, {hub_ids[key]: label for key, label in graph.hubs.items()})
