"""KVC004 shared-sentinel-mutation: the process-wide empty sentinel is mutated."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvlint.fixing.model import Applicability, Fix
from kvlint.rules.rule import Rule
from kvlint.sites import SentinelUseKind, Site, SiteKind

if TYPE_CHECKING:
    import libcst as cst

    from kvlint.fixing.context import FixContext


def check(site: Site) -> str | None:
    """Report an attribute assignment, deletion or `setattr` on the sentinel or an alias of it."""
    if site.kind is not SiteKind.SENTINEL_USE or site.sentinel_use is not SentinelUseKind.MUTATED:
        return None
    if site.sink == "shallow-copy member":
        return (
            f"`{site.operand}` is the shared empty sentinel's own container (a shallow copy shares it); mutating "
            "it corrupts every later step; assign a new one or copy with `copy.deepcopy`"
        )
    if site.sink == "member":
        return (
            f"`{site.operand}` belongs to the shared empty sentinel; mutating it corrupts every later step; "
            "mutate a `copy.deepcopy(...)` of the sentinel instead"
        )
    return (
        f"`{site.operand}` is the shared empty sentinel (not a copy); mutating it corrupts every later step; "
        "mutate `copy.copy(...)` of it instead"
    )


def fix(site: Site, context: FixContext) -> Fix:
    """Copy the sentinel where the mutated name is bound to it: `o = copy.copy(EMPTY_MODEL_RUNNER_OUTPUT)`."""
    import libcst as cst

    from kvlint.fixing.context import NoFix

    if site.sink:
        raise NoFix("a member of the sentinel is mutated: whether to copy it deeply or rebind it is your call")
    mutation = context.nodes_at(site.span)
    if not mutation:
        raise NoFix("kvlint could not find the code it reports (please report this)")
    function = context.function_of(mutation[0])
    if function is None:
        raise NoFix("the sentinel is mutated outside a function")
    name = site.operand
    invariant = context.invariant(site.invariant)
    if "." in name or not name.isidentifier():
        raise NoFix(f"`{name}` is the sentinel itself: which copy to mutate instead is your call")
    bindings = _bindings(function, name, context)
    if not bindings:
        raise NoFix(f"`{name}` is the sentinel itself: which copy to mutate instead is your call")
    if len(bindings) != 1 or not isinstance(bindings[0], cst.Assign) or len(bindings[0].targets) != 1:
        raise NoFix(f"`{name}` is bound more than once (or not by a plain assignment) in `{function.name.value}`")
    value = bindings[0].value
    spelled = context.code(value)
    if not context.imports.resolve_dotted(spelled) or not _is_sentinel(context, spelled, invariant.empty_sentinels):
        raise NoFix(f"`{name}` is not bound to the sentinel by name")
    identity = _identity_use(function, bindings[0], name, context, invariant.empty_sentinels)
    if identity:
        raise NoFix(identity)
    member = _member_mutated_in_place(function, name, context)
    if member:
        raise NoFix(f"`{member}` is mutated in place, and a shallow copy shares it with the sentinel: copy with "
                    "`copy.deepcopy` or assign the member anew")
    copy, imports = context.copy_function(value)
    return Fix(
        f"Bind `{name}` to `{copy}({spelled})`",
        Applicability.SAFE,
        (*imports, context.replace(context.span(value), f"{copy}({spelled})")),
    )


def _identity_use(
    function: cst.FunctionDef, binding: cst.CSTNode, name: str, context: FixContext, sentinels: tuple[str, ...]
) -> str:
    """Why a copy would change what the function (or this module) sees, "" when it would not: `name` is
    compared by `is` or `==` with something other than None, the function reads the sentinel itself where
    the mutation through `name` may already have happened (it sees that mutation; a copy would hide it), or
    `name` is returned and the module compares outputs with the sentinel by identity."""
    import libcst as cst

    from kvlint.fixing.context import cst_dotted_name, is_cst_none

    compared = (cst.Is, cst.IsNot, cst.Equal, cst.NotEqual)
    value = getattr(binding, "value", None)
    start = context.span(binding)
    returned = False
    stack: list[tuple[cst.CSTNode, bool]] = [(function.body, False)]  # (node, inside a loop or nested scope)
    while stack:
        current, late = stack.pop()
        if current is value:
            continue
        if isinstance(current, cst.Comparison):
            operands = [current.left, *(target.comparator for target in current.comparisons)]
            for index, target in enumerate(current.comparisons):
                pair = operands[index : index + 2]
                if isinstance(target.operator, compared) and any(
                    isinstance(side, cst.Name) and side.value == name for side in pair
                ) and not any(is_cst_none(side) for side in pair):
                    return (f"`{context.short(context.code(current))}` compares `{name}`: with a copy of the "
                            "sentinel its result would change")
        if isinstance(current, (cst.Name, cst.Attribute)):
            spelled = cst_dotted_name(current)
            if spelled and _is_sentinel(context, spelled, sentinels):
                where = context.span(current)
                if late or (where.line, where.column) > (start.end_line, start.end_column):
                    return (f"the function also uses `{spelled}` itself (line {where.line}), which sees the "
                            f"mutation made through `{name}`; with a copy it would not")
                continue
        if isinstance(current, cst.Return) and isinstance(current.value, cst.Name) and current.value.value == name:
            returned = True
        inner = late or isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) or (
            isinstance(current, (cst.For, cst.While)) and _contains(current, binding, context))
        stack.extend((child, inner) for child in context.children(current))
    if returned:
        line = _identity_check_in_module(context, sentinels, function)
        if line:
            return (f"`{name}` is returned, and this module compares with the sentinel by identity (line {line}): "
                    "a copy would change what that comparison says")
    return ""


def _contains(outer: cst.CSTNode, node: cst.CSTNode, context: FixContext) -> bool:
    stack = [outer]
    while stack:
        current = stack.pop()
        if current is node:
            return True
        stack.extend(context.children(current))
    return False


def _identity_check_in_module(context: FixContext, sentinels: tuple[str, ...], function: cst.FunctionDef) -> int:
    """The line of an `is` / `is not` comparison with the sentinel outside `function`, 0 when there is none (the
    module's comparisons are found once per file, not once per finding)."""
    from kvlint.fixing.context import cst_dotted_name

    return context.identity_comparison_outside(
        function, ("sentinels", sentinels), lambda side: _is_sentinel(context, cst_dotted_name(side) or "", sentinels)
    )


_IN_PLACE_METHODS = frozenset(
    "append extend insert pop remove clear update add discard setdefault popitem sort reverse".split()
)


def _member_mutated_in_place(function: cst.FunctionDef, name: str, context: FixContext) -> str:
    """`name.member` as the function mutates it in place (`+=` of a container, an item assignment, a
    mutating method), "" when it does not."""
    import libcst as cst

    from kvlint.fixing.context import cst_dotted_name

    def member_of(node: cst.CSTNode) -> str:
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == name:
            return f"{name}.{node.attr.value}"
        return ""

    containers = (cst.List, cst.Set, cst.Dict, cst.ListComp, cst.SetComp, cst.DictComp, cst.Tuple)
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        current = stack.pop()
        if isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(current, cst.AugAssign) and member_of(current.target) and isinstance(current.value, containers):
            return member_of(current.target)
        targets: list[cst.CSTNode] = []
        if isinstance(current, cst.Assign):
            targets = [target.target for target in current.targets]
        elif isinstance(current, (cst.AugAssign, cst.Del)):
            targets = [current.target]
        for target in targets:
            if isinstance(target, cst.Subscript) and member_of(target.value):
                return member_of(target.value)  # an item of the member: the list or dict itself changes
        if isinstance(current, cst.Call) and isinstance(current.func, cst.Attribute):
            receiver = member_of(current.func.value)
            if receiver and current.func.attr.value in _IN_PLACE_METHODS and cst_dotted_name(current.func):
                return receiver
        stack.extend(context.children(current))
    return ""


def _is_sentinel(context: FixContext, spelled: str, sentinels: tuple[str, ...]) -> bool:
    from kvlint.binding.names import matches

    resolved = context.imports.resolve_dotted(spelled)
    if "." not in resolved and context.module_name and spelled not in context.imports.bindings:
        resolved = f"{context.module_name}.{resolved}"
    return bool(spelled) and all(part.isidentifier() for part in spelled.split(".")) and matches(resolved, sentinels)


def _bindings(function: cst.FunctionDef, name: str, context: FixContext) -> list[cst.CSTNode]:
    """The statements and clauses of the function (not of nested scopes) that bind `name`."""
    import libcst as cst

    found: list[cst.CSTNode] = []
    stack: list[cst.CSTNode] = [function.params, function.body]
    while stack:
        current = stack.pop()
        if isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            if isinstance(current, (cst.FunctionDef, cst.ClassDef)) and current.name.value == name:
                found.append(current)
            continue
        targets: list[cst.CSTNode] = []
        if isinstance(current, cst.Assign):
            targets = [target.target for target in current.targets]
        elif isinstance(current, (cst.AnnAssign, cst.AugAssign, cst.For, cst.NamedExpr, cst.CompFor)):
            targets = [current.target]
        elif isinstance(current, cst.AsName):
            targets = [current.name]
        elif isinstance(current, cst.Param):
            targets = [current.name]
        elif isinstance(current, (cst.Global, cst.Nonlocal)):
            targets = [item.name for item in current.names]
        elif isinstance(current, (cst.Import, cst.ImportFrom)) and not isinstance(current.names, cst.ImportStar):
            targets = [alias.asname.name if alias.asname else alias.name for alias in current.names]
        if any(_names(target, name) for target in targets):
            found.append(current)
        stack.extend(context.children(current))
    return found


def _names(target: cst.CSTNode, name: str) -> bool:
    import libcst as cst

    if isinstance(target, cst.Name):
        return target.value == name
    if isinstance(target, (cst.Tuple, cst.List)):
        return any(_names(element.value, name) for element in target.elements)
    if isinstance(target, cst.StarredElement):
        return _names(target.value, name)
    return False


RULE = Rule(
    code="KVC004",
    name="shared-sentinel-mutation",
    summary="The shared empty sentinel output is mutated in place",
    what=(
        "Finds attribute assignments, augmented assignments, `del` and `setattr` on the empty sentinel "
        "(`EMPTY_MODEL_RUNNER_OUTPUT`) or on a name bound to it without `copy.copy`, `copy.deepcopy` or "
        "`dataclasses.replace`."
        " Checked for every invariant in one pass: the KV connector's `kv_connector_output` and the encoder-cache "
        "connector's `ec_connector_output` by default, each with its own names; the message names the field."
    ),
    why=(
        "The sentinel is one module-level object returned by every idle step of the process; writing a "
        "KVConnectorOutput into it leaks that step's transfers into every later empty output."
    ),
    bad="""
def idle_step(kvo):
    output = EMPTY_MODEL_RUNNER_OUTPUT
    output.kv_connector_output = kvo
    return output
""",
    good="""
def idle_step(kvo):
    output = copy.copy(EMPTY_MODEL_RUNNER_OUTPUT)
    output.kv_connector_output = kvo
    return output
""",
    options=("empty-sentinels",),
    check=check,
    site_kinds=frozenset({SiteKind.SENTINEL_USE}),
    fix=fix,
    fix_doc=(
        "Safe. Where the mutated name has one binding in the function, `o = EMPTY_MODEL_RUNNER_OUTPUT`, it "
        "becomes `o = copy.copy(EMPTY_MODEL_RUNNER_OUTPUT)`, spelled the way the file imports `copy` (`import copy`, "
        "`import copy as c`, `from copy import copy`), adding `import copy` when it has neither. The function "
        "sees the same field values as before; only the shared object stops being written, which is the bug. "
        "No fix for a mutation of the sentinel spelled directly, of one of its members, or of a name bound "
        "twice: which object to mutate instead is a design decision. No fix either where a copy would change "
        "what the code sees: the name is compared by `is` or `==` with anything but None, the function uses the "
        "sentinel itself where the mutation may already have happened (after the binding, in the same loop, in "
        "a nested function), or the name is returned and the module compares with the sentinel by identity "
        "(a caller in another module that does is not seen: review the callers of a function whose result "
        "was the sentinel). Nor where `copy` is bound to something else in the module or an enclosing function."
    ),
    fix_before="""
from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT


def idle_step(kvo):
    output = EMPTY_MODEL_RUNNER_OUTPUT
    output.kv_connector_output = kvo
    return output
""",
    fix_after="""
import copy

from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT


def idle_step(kvo):
    output = copy.copy(EMPTY_MODEL_RUNNER_OUTPUT)
    output.kv_connector_output = kvo
    return output
""",
)
