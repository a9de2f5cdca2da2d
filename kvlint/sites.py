"""The engine's product: every relevant site of a file with its facts.

The rules, the audit and the mypy plugin all read these records; none of them
looks at syntax again. Positions are the file's lines (1-based) and character
columns (0-based; `kvlint/flow/source.py` converts `ast`'s byte offsets), and are
converted only at the output edges.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


@dataclass(frozen=True, order=True, slots=True)
class Span:
    """Where a site lies: 1-based lines, 0-based columns, end exclusive."""

    line: int
    column: int
    end_line: int
    end_column: int


class SiteKind(str, enum.Enum):
    """What a site is; the value is the name used in JSON output."""

    OUTPUT_CONSTRUCTION = "output-construction"  # ModelRunnerOutput(...)
    PAYLOAD_CONSTRUCTION = "payload-construction"  # KVConnectorOutput(...)
    OPTIONAL_ACCESS = "optional-access"  # a read of x.kv_connector_output
    OPTIONAL_WRITE = "optional-write"  # x.kv_connector_output = value (attaching an output)
    DEREFERENCE = "dereference"  # a sink applied to a tracked value
    SENTINEL_USE = "sentinel-use"  # EMPTY_MODEL_RUNNER_OUTPUT returned/copied/...
    CONNECTOR_CONTEXT = "connector-context"  # with _get_kv_connector_output(...)
    CONNECTOR_FUNCTION = "connector-function"  # a function on a connector path
    CONNECTOR_GUARD = "connector-guard"  # has_kv_transfer_group() tested in a condition
    KV_DROPPED = "kv-output-dropped"  # a producer returns without the KV output it holds


class DerefTarget(str, enum.Enum):
    """Which kind of maybe-None value a dereference applies to."""

    CONNECTOR_OUTPUT = "connector-output"  # KVConnectorOutput | None  (KVC001)
    PAYLOAD_FIELD = "payload-field"  # finished_sending: set | None  (KVC005)


class SentinelUseKind(str, enum.Enum):
    """How the empty sentinel is used at a site."""

    RETURNED = "returned"
    MUTATED = "mutated"
    COPIED = "copied"
    ALIASED = "aliased"


@dataclass(frozen=True, slots=True)
class Site:
    """One relevant place in a file, with the flow facts that hold there.

    Only the fields that make sense for `kind` are set; the others keep their
    defaults. A site belongs to one invariant: a construction or a return of the sentinel that several
    invariants share is recorded once for each. `on_connector_path` is what docs/design.md
    ("Connector paths") defines, for the site's invariant; `may_be_none`
    says whether the flow analysis could not prove the value non-None;
    `guard` says how it was proven (for the audit).
    """

    kind: SiteKind
    span: Span
    function: str  # enclosing scope: "Class.method", "func.inner", "func.<lambda>", "<module>"
    expression: str  # the source text of the site, shortened to one line
    operand: str = ""  # for a dereference: the maybe-None expression itself
    on_connector_path: bool = False
    may_be_none: bool = False  # for an optional-write: the attached value may be None (or is unknown)
    definitely_none: bool = False  # for a dereference: the value is None on every path here
    guard: str = ""  # how a value was proven non-None ("" when not proven)
    origin: str = ""  # where a maybe-None value came from, e.g. `out.kv_connector_output`; for a dropped
    # KV output, where the value held was read
    deref_target: DerefTarget | None = None
    sink: str = ""  # the kind of dereference: "attribute access", "iteration", ...
    sentinel_use: SentinelUseKind | None = None
    carries_connector_output: bool | None = None  # None: cannot tell (**kwargs)
    connector_output_argument: str = ""  # source of the kv_connector_output= argument
    path_reason: str = ""  # why the point is on a connector path
    allowed_empty: bool = False  # a returned sentinel that `empty-output = "allow-when-empty"` accepts here
    unchecked_fields: tuple[str, ...] = ()  # where it does not: what a partial emptiness test left unchecked
    invariant: str = ""  # the invariant the site speaks for (`kv`, `ec`); its path facts are that invariant's
    field: str = ""  # that invariant's optional field, as messages name it (`kv_connector_output`)
    payload: str = ""  # its payload class, as messages name it (`KVConnectorOutput`)
    operand_span: Span | None = None  # for a dereference: where the maybe-None expression itself lies (fixes)
    # at a return or a construction: the local names holding this invariant's connector output that may be
    # non-None there, and of those the ones proven non-None and not known empty (a fix attaches the one candidate)
    candidates: tuple[str, ...] = ()
    # a KV output parked on a returned holder its callers drop: the holder's name and class, and those callers
    parked_on: str = ""
    parked_class: str = ""
    dropped_by: tuple[str, ...] = ()  # "`module.Worker.execute_model` (line 869)"
    proven_candidates: tuple[str, ...] = ()
    # the qualified names that decided it, each "role: name" (`declaration: vllm.v1.outputs.ModelRunnerOutput.
    # kv_connector_output`, `payload class: ...`, `output class: ...`, `sentinel: ...`, `holder class: ...`)
    resolved: tuple[str, ...] = ()
