"""The producer -> field -> consumer graph of an audit, which the mermaid and dot formats (and markdown) draw.

Nothing here analyses code: the graph only groups the inventory by function, and the functions by module and class.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvlint.report.audit import AuditReport


@dataclass
class _GraphNode:
    """A function, as a producer or as a consumer of outputs."""

    path: str
    function: str
    edges: dict[tuple[str, str], int] = field(default_factory=dict)  # (hub key, edge label) -> count
    status: str = "off"  # "bad", "ok" or "off"


# Producer edges (label, status) and consumer edges, worst first so that a node takes its worst status.
_PRODUCER_EDGES = {
    "returns the sentinel on a connector path": "bad",
    "mutates the shared sentinel": "bad",
    "built without it on a connector path": "bad",
    "drops the connector output it holds": "bad",
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


_RANK = {"bad": 0, "ok": 1, "copy": 2, "off": 3}


@dataclass
class ConnectorGraph:
    """Producing and consuming functions of outputs, meeting at the field they pass through (the hub).

    The static facts say what each function does with the field, not which output reaches which reader
    (kvlint has no inter-procedural flow), so a producer feeds a consumer exactly when both touch the same
    hub: every output a producer builds may reach every reader of that field. Nodes are drawn grouped by
    module, then class. Each invariant's field is a hub of its own (`ModelRunnerOutput.kv_connector_output`,
    `ModelRunnerOutput.ec_connector_output`); a function that touches both has edges to both.
    """

    hubs: dict[str, str]  # hub key -> label
    producers: list[_GraphNode]
    consumers: list[_GraphNode]

    def common_prefix(self) -> str:
        """The directory shared by every node's file, left out of the labels."""
        paths = [node.path for node in (*self.producers, *self.consumers)]
        if not paths:
            return ""
        prefix = posixpath.commonpath(paths) if len(paths) > 1 else posixpath.dirname(paths[0])
        if prefix in paths:  # a single file: keep its name
            prefix = posixpath.dirname(prefix)
        return prefix + "/" if prefix else ""


def class_of(function: str) -> str:
    """The class a qualified name lies in, by PEP 8's naming (`Worker.execute_model` -> `Worker`), else ""."""
    first = function.split(".", 1)[0]
    return first if first[:1].isupper() else ""


def grouped(nodes: list[_GraphNode]) -> list[tuple[str, list[tuple[str, list[_GraphNode]]]]]:
    """Nodes by module (file), then by class ("" for module-level functions first), in a stable order."""
    modules: dict[str, dict[str, list[_GraphNode]]] = {}
    for node in sorted(nodes, key=lambda node: (node.path, class_of(node.function), node.function)):
        modules.setdefault(node.path, {}).setdefault(class_of(node.function), []).append(node)
    return [(path, list(classes.items())) for path, classes in modules.items()]


def _short_name(node: _GraphNode) -> str:
    """The node's name inside its class's group (`execute_model`), or the class body's."""
    cls = class_of(node.function)
    if not cls:
        return node.function
    return node.function[len(cls) + 1:] if node.function != cls else "(class body)"


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


def connector_graph(report: AuditReport) -> ConnectorGraph:
    """Group the inventory by function into producer and consumer nodes, each edge through its invariant's hub."""
    drawn = _drawn_invariants(report)
    producers: dict[tuple[str, str], _GraphNode] = {}
    consumers: dict[tuple[str, str], _GraphNode] = {}

    def add(nodes: dict[tuple[str, str], _GraphNode], hub: str, path: str, function: str, label: str) -> None:
        if hub not in drawn:
            return
        node = nodes.setdefault((path, function), _GraphNode(path, function))
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
        add(producers, c.invariant, c.position.path, c.function, label)
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
        add(producers, u.invariant, u.position.path, u.function, label)
    for d in report.dropped_kv_outputs:
        add(producers, d.invariant, d.position.path, d.function, "drops the connector output it holds")
    for w in report.connector_output_writes:
        label = "attaches a maybe-None value" if w.may_be_none else "attaches a connector output"
        add(producers, w.invariant, w.position.path, w.function, label)
    readers = {(a.invariant, a.position.path, a.function) for a in report.connector_output_accesses}
    for d in report.dereferences:
        key = (d.invariant, d.position.path, d.function)
        if not d.guarded:
            add(consumers, *key, "unguarded dereference")
        elif key in readers:
            add(consumers, *key, "guarded dereference")
    for hub, path, function in sorted(readers):
        node = consumers.get((path, function))
        if node is None or not any(key[0] == hub for key in node.edges):
            add(consumers, hub, path, function, "read, passed on or checked")
    order = [*_PRODUCER_EDGES, *_CONSUMER_EDGES]
    for nodes, ranks in ((producers, _PRODUCER_EDGES), (consumers, _CONSUMER_EDGES)):
        for node in nodes.values():
            node.status = min((ranks[label] for _, label in node.edges), key=_RANK.__getitem__)
            rank = lambda item: (drawn.index(item[0][0]), order.index(item[0][1]))  # noqa: E731
            node.edges = dict(sorted(node.edges.items(), key=rank))
    by_name = {invariant.name: invariant for invariant in report.invariants}
    hubs = {name: " / ".join(by_name[name].output_classes) + "." + " / ".join(by_name[name].optional_fields)
            for name in drawn}
    position = lambda node: (node.path, node.function)  # noqa: E731
    return ConnectorGraph(hubs, sorted(producers.values(), key=position), sorted(consumers.values(), key=position))


# status -> (fill, stroke): breaks the invariant, keeps it, copies the sentinel (attaches later?), off the path
_COLOURS = {"bad": ("#fde2e1", "#c62828"), "ok": ("#e3f4e1", "#2e7d32"), "copy": ("#e3ecfa", "#1f4e99"),
            "off": ("#f1f1f1", "#8a8a8a")}


GRAPH_LEGEND = (
    "red: breaks the invariant (a kvlint finding) · green: carries its connector output, or dereferences it guarded",
    "blue: copies the empty sentinel (a write may then attach the output) · grey, dashed: off the connector path, "
    "or read without a dereference",
)


def _edge_label(label: str, count: int) -> str:
    return f"{label} ×{count}" if count > 1 else label


def _status_of_edge(label: str) -> str:
    return _PRODUCER_EDGES.get(label) or _CONSUMER_EDGES[label]


_SIDES = (("p", "producers: build or return an output"), ("c", "consumers: read a connector output"))


@dataclass(frozen=True)
class _Drawn:
    """What both graph formats draw, in order: clusters opening and closing, nodes, then the edges."""

    lines: list[tuple[str, int, str, str, str]]  # (kind: "open"/"close"/"node", depth, ident, label, status)
    edges: list[tuple[str, str, str, str]]  # (source, target, label, status)
    hubs: dict[str, str]  # ident -> label


def _drawn(report: AuditReport) -> _Drawn:
    """Lay the graph out once: a cluster per side, per module inside it, per class inside that."""
    graph = connector_graph(report)
    prefix = graph.common_prefix()
    hub_ids = {key: f"h{number}" for number, key in enumerate(graph.hubs, start=1)}
    lines: list[tuple[str, int, str, str, str]] = []
    edges: list[tuple[str, str, str, str]] = []
    for (side, title), nodes in zip(_SIDES, (graph.producers, graph.consumers)):
        lines.append(("open", 1, side, title, ""))
        count = 0
        for module_number, (path, classes) in enumerate(grouped(nodes), start=1):
            module = f"{side}_m{module_number}"
            lines.append(("open", 2, module, path[len(prefix):] if path.startswith(prefix) else path, ""))
            for class_number, (cls, members) in enumerate(classes, start=1):
                depth = 3 if cls else 2
                if cls:
                    lines.append(("open", 3, f"{module}_k{class_number}", f"class {cls}", ""))
                for node in members:
                    count += 1
                    ident = f"{side}{count}"
                    lines.append(("node", depth + 1, ident, _short_name(node), node.status))
                    for (hub, label), times in node.edges.items():
                        pair = (ident, hub_ids[hub]) if side == "p" else (hub_ids[hub], ident)
                        edges.append((*pair, _edge_label(label, times), _status_of_edge(label)))
                if cls:
                    lines.append(("close", 3, "", "", ""))
            lines.append(("close", 2, "", "", ""))
        lines.append(("close", 1, "", "", ""))
    return _Drawn(lines, edges, {hub_ids[key]: label for key, label in graph.hubs.items()})
