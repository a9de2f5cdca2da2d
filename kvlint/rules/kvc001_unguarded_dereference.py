"""KVC001 unguarded-dereference: a maybe-None connector output is dereferenced."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvlint.fixing.model import Applicability, Fix
from kvlint.rules.rule import Rule
from kvlint.sites import DerefTarget, Site, SiteKind

if TYPE_CHECKING:
    import libcst as cst

    from kvlint.fixing.context import FixContext

# callees whose argument is dereferenced in turn: `len(v.x if v is not None else None)` still raises
_DEREFERENCING_BUILTINS = frozenset(
    "len iter next sorted list set tuple dict frozenset sum max min any all enumerate zip reversed".split()
)


def check(site: Site) -> str | None:
    """Report a dereference of a `KVConnectorOutput | None` the flow could not prove non-None."""
    if site.kind is not SiteKind.DEREFERENCE or site.deref_target is not DerefTarget.CONNECTOR_OUTPUT:
        return None
    if not site.may_be_none:
        return None
    origin = f" (from {site.origin})" if site.origin and site.origin != f"`{site.operand}`" else ""
    if site.origin.startswith("declared "):
        origin = f" ({site.origin})"
    if site.definitely_none:
        return f"`{site.operand}` is None here{origin}; the {site.sink} raises"
    return f"`{site.operand}` may be None{origin}; check it before the {site.sink}"


def fix(site: Site, context: FixContext) -> Fix:
    """A None guard matched to the context: `continue` in a loop, an early `return` the function's other
    returns show, else a conditional expression around an attribute read."""
    import libcst as cst

    from kvlint.fixing.context import NoFix, is_simple_reference

    operand = context.node_at(site.operand_span, cst.BaseExpression)
    if not is_simple_reference(operand):
        raise NoFix("the None value is not a name or an attribute chain: a guard would evaluate it twice")
    text = context.code(operand)
    root = text.partition(".")[0]
    statement, in_header_of = _statement_of(operand, context, root)
    exit_, why_not = _exit(statement, context)
    partly = _evaluated_on_some_paths(operand, statement, context)
    if partly and exit_ is not None:
        exit_, why_not = None, (f"the dereference runs only on some paths through its statement ({partly}): a guard "
                                "before the statement would skip the others too")
    if exit_ is not None and in_header_of is None:
        start, indent = context.statement_start(statement)
        newline = context.newline(start)
        guard = f"{indent}if {text} is None:{newline}{indent}{context.indent_unit}{exit_}{newline}"
        edit = context.replace(_point(start), guard)
        return Fix(f"Guard `{text}` with `if {text} is None: {exit_}`", Applicability.UNSAFE, (edit,))
    attribute = context.parent(operand)
    if isinstance(attribute, cst.Attribute) and attribute.value is operand and _value_position(attribute, context):
        context.check_not_self_documenting(attribute)
        read = context.code(attribute)
        replacement = f"({read} if {text} is not None else None)"
        return Fix(f"Read `{context.short(read)}` only when `{text}` is not None", Applicability.UNSAFE,
                   (context.replace(context.span(attribute), replacement),))
    if in_header_of is not None:
        raise NoFix(f"the dereference is in {in_header_of}, where no guard statement fits")
    raise NoFix(why_not)


def _point(line: int):  # type: ignore[no-untyped-def]
    from kvlint.sites import Span

    return Span(line, 0, line, 0)


def _statement_of(operand: cst.CSTNode, context: FixContext, root: str) -> tuple[cst.CSTNode, str | None]:
    """The statement a guard goes before, and what blocks it (an `elif` condition, a one-line suite)."""
    import libcst as cst

    from kvlint.fixing.context import NoFix

    for parent, child in context.ancestors(operand):
        if isinstance(parent, (cst.Lambda, cst.FunctionDef, cst.ClassDef)):
            raise NoFix("the dereference is in a nested scope of its own")
        if isinstance(parent, (cst.CompFor, cst.NamedExpr)) and _binds(parent.target, root):
            raise NoFix(f"`{root}` is bound in the same expression")
        if isinstance(parent, cst.SimpleStatementSuite):
            return child, "a one-line block"
        if isinstance(parent, cst.SimpleStatementLine):
            if len(parent.body) != 1:
                return parent, "a line of several statements"
            return parent, None
        if isinstance(parent, cst.BaseCompoundStatement) and not isinstance(child, cst.BaseSuite):
            holder = context.parent(parent)
            if isinstance(holder, cst.If) and holder.orelse is parent:
                return parent, "an `elif` condition"
            if isinstance(parent, (cst.For, cst.With)) and _binds(getattr(parent, "target", None), root):
                raise NoFix(f"`{root}` is bound in the same statement")
            return parent, None
    raise NoFix("kvlint could not find the statement of the dereference (please report this)")


def _evaluated_on_some_paths(operand: cst.CSTNode, statement: cst.CSTNode, context: FixContext) -> str:
    """What makes the statement evaluate the operand on some paths only (`and`/`or`, a conditional
    expression, a `case` guard, a comprehension's element or condition), "" when it always does."""
    import libcst as cst

    for parent, child in context.ancestors(operand):
        if parent is statement:
            break
        if isinstance(parent, cst.BooleanOperation) and child is parent.right:
            return f"`{context.code(parent.operator).strip()}`"
        if isinstance(parent, cst.IfExp) and child is not parent.test:
            return "a conditional expression"
        if isinstance(parent, cst.MatchCase) and child is parent.guard:
            return "a `case` guard"
        if isinstance(parent, cst.CompFor) and child is not parent.iter:
            return "a comprehension"
        if isinstance(parent, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)) and child is not getattr(
                parent, "for_in", None):
            return "a comprehension"
    return ""


def _binds(target: object, root: str) -> bool:
    import libcst as cst

    if isinstance(target, cst.Name):
        return target.value == root
    if isinstance(target, (cst.Tuple, cst.List)):
        return any(_binds(element.value, root) for element in target.elements)
    return False


def _exit(statement: cst.CSTNode, context: FixContext) -> tuple[str | None, str]:
    """`continue` inside a `for` body; in a function, the `return` its other returns all make; else None and
    why not."""
    import libcst as cst

    unclear = "neither a loop nor the function's returns show what to do when it is None"
    for parent, child in context.ancestors(statement):
        if isinstance(parent, cst.Finally):
            return None, "the dereference is in a `finally` block, where an early exit would swallow exceptions"
        if isinstance(parent, cst.While):
            return None, "in a `while` loop, `continue` would skip what advances the loop"
        if isinstance(parent, cst.For):
            return ("continue", "") if child is parent.body else (None, unclear)
        if isinstance(parent, cst.FunctionDef):
            exit_ = _function_return(parent, context)
            return exit_, "" if exit_ else unclear
        if isinstance(parent, (cst.ClassDef, cst.Lambda)):
            return None, unclear
    return None, unclear


def _function_return(function: cst.FunctionDef, context: FixContext) -> str | None:
    """`return` (or `return X`) when every return of the function agrees on X, a literal; None otherwise."""
    import libcst as cst

    values: set[str] = set()
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        current = stack.pop()
        if isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(current, cst.Yield):
            return None  # a generator: what stopping early means is not for kvlint to say
        if isinstance(current, cst.Return):
            value = current.value
            if value is None:
                values.add("")
            elif isinstance(value, cst.Name) and value.value in ("None", "True", "False") or isinstance(
                value, (cst.Integer, cst.SimpleString)
            ):
                values.add(cst.Module([]).code_for_node(value))
            else:
                return None
        stack.extend(context.children(current))
    if len(values) > 1:
        return None
    value = next(iter(values), "")
    return f"return {value}" if value else "return"


def _value_position(attribute: cst.Attribute, context: FixContext) -> bool:
    """The read's value is stored, returned or passed on, not dereferenced again (None would only move the
    crash)."""
    import libcst as cst

    from kvlint.flow.expressions import ITERATING_METHODS

    parent = context.parent(attribute)
    if isinstance(parent, (cst.Assign, cst.AnnAssign, cst.Return)):
        return parent.value is attribute
    if isinstance(parent, cst.Arg) and parent.value is attribute and not parent.star:
        call = context.parent(parent)
        callee = call.func if isinstance(call, cst.Call) else None
        if isinstance(callee, cst.Attribute) and callee.attr.value in ITERATING_METHODS:
            return False  # `done.update(None)` raises as well
        return not (isinstance(callee, cst.Name) and callee.value in _DEREFERENCING_BUILTINS)
    return False


RULE = Rule(
    code="KVC001",
    name="unguarded-dereference",
    summary="A `KVConnectorOutput | None` value is dereferenced without a None check",
    what=(
        "Finds attribute reads, subscripts, iteration, `len()`, `in`, calls, `with` and arithmetic on a value "
        "that may be None: a read of `kv_connector_output`, a name bound from one, a parameter or attribute "
        "annotated `KVConnectorOutput | None`, the target of an optional context, or the result of a function "
        "declared to return `KVConnectorOutput | None`."
        " Checked for every invariant in one pass: the KV connector's `kv_connector_output` and the encoder-cache "
        "connector's `ec_connector_output` by default, each with its own names; the message names the field."
    ),
    why=(
        "Outputs built from the shared empty sentinel carry `kv_connector_output=None`; dereferencing it raises "
        "`AttributeError: 'NoneType' object has no attribute 'finished_sending'` and kills the engine process."
    ),
    bad="""
def merge(outputs):
    for out in outputs:
        kvo = out.kv_connector_output
        done.update(kvo.finished_sending or ())
""",
    good="""
def merge(outputs):
    for out in outputs:
        kvo = out.kv_connector_output
        if kvo is None:
            continue
        done.update(kvo.finished_sending or ())
""",
    options=("optional-fields", "payload-class", "optional-contexts"),
    check=check,
    site_kinds=frozenset({SiteKind.DEREFERENCE}),
    maybe_none_only=True,
    fix=fix,
    fix_applicabilities=frozenset({Applicability.UNSAFE}),
    mypy_dereference=DerefTarget.CONNECTOR_OUTPUT,
    fix_doc=(
        "Unsafe: every form skips work, or yields None, where the code used to raise, and only you know what "
        "the None case should do. A guard matched to the context of the dereferenced name or attribute chain "
        "`v`: in a loop body, `if v is None: continue` before the statement (above the comments right over it); "
        "in a function whose returns all agree (none, bare, `return None`, or one literal), `if v is None: "
        "return ...` the same way; else, for an attribute read whose value is stored, returned or passed on, "
        "`(v.x if v is not None else None)` (not as the argument of a callee that iterates it, where None "
        "raises too). No fix for a value that is not a name or an attribute chain, a "
        "dereference in an `elif` condition, a one-line block or a line of several statements, or where "
        "neither a loop nor the returns show what to do; no guard statement for a dereference its statement "
        "evaluates on some paths only (right of `and`/`or`, a branch of a conditional expression, a `case` "
        "guard, a comprehension's element or condition): it would skip work where the code did not raise."
    ),
    fix_before="""
def merge(outputs):
    for out in outputs:
        kvo = out.kv_connector_output
        # tally what finished
        done.update(kvo.finished_sending or ())
""",
    fix_after="""
def merge(outputs):
    for out in outputs:
        kvo = out.kv_connector_output
        if kvo is None:
            continue
        # tally what finished
        done.update(kvo.finished_sending or ())
""",
)
