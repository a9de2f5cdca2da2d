"""KVC001/KVC005 in the mypy face: the engine's finding, unless mypy types the dereferenced value with None.

Where mypy types the dereferenced value as `X | None`, mypy reports the dereference itself (`union-attr`,
`arg-type`, `operator`, `index`, ...), and a `[kvc]` error there would say it twice. Where mypy types it
without None (a variable re-bound against its declared type, `Any` from a module mypy does not follow),
nothing in mypy's output says the value may be None, so the plugin reports the engine's finding.

The verdict reads mypy's own type of the dereferenced expression, which exists once mypy has checked it.
A type with None silences the finding at once. A type without None reports it only when that type is final:
not while mypy is still in a loop around it (mypy checks a loop body more than once and reports a None seen
in any pass), and not the `Any` mypy gives while it defers a function (it checks the function again later).
So a finding is reported from the first hook of its module that fires after mypy is done with it.
"""

from __future__ import annotations

from collections.abc import Iterator

from mypy.nodes import Expression, MypyFile
from mypy.plugin import CheckerPluginInterface
from mypy.types import AnyType, NoneType, Type, TypeOfAny, TypeVarType, UnionType, get_proper_type

from kvlint.findings import Finding
from kvlint.mypy_worker import Dereference

# the `Any` of an expression mypy could not type yet (a deferred function) or at all: not a final type
_UNSETTLED_ANY = (TypeOfAny.special_form, TypeOfAny.from_error)


class ModuleDereferences:
    """The KVC001/KVC005 findings of one module, matched to mypy's tree, with the verdicts reached so far."""

    def __init__(self, tree: MypyFile, dereferences: tuple[Dereference, ...]) -> None:
        self.tree = tree
        self._dereferences = dereferences
        wanted = {span for dereference in dereferences for span in dereference.operands}
        by_span: dict[tuple[int, int, int, int], list[Expression]] = {}
        for node in _expressions(tree):
            span = (node.line, node.column, node.end_line or 0, node.end_column or 0)
            if span in wanted:
                by_span.setdefault(span, []).append(node)
        self._operands = [[node for span in dereference.operands for node in by_span.get(span, ())]
                          for dereference in dereferences]
        self._silent: set[int] = set()  # mypy types the value with None there: it reports it itself

    def to_report(self, api: CheckerPluginInterface, hook_line: int) -> Iterator[Finding]:
        """Yield the findings mypy is done with and gives no None error for, seen from a hook at `hook_line`."""
        for number, (dereference, operands) in enumerate(zip(self._dereferences, self._operands)):
            if number in self._silent or not operands:
                continue  # no node for the value: mypy's view is unknown, so say nothing
            types = [_type_of(api, operand) for operand in operands]
            if any(typ is not None and _includes_none(typ) for typ in types):
                self._silent.add(number)
            elif all(typ is not None and _is_final(typ) for typ in types) and not (
                dereference.loop_lines and dereference.loop_lines[0] <= hook_line <= dereference.loop_lines[1]
            ):
                yield dereference.finding


def _expressions(tree: MypyFile) -> list[Expression]:
    """Every expression of the module.

    `mypy.server.subexpr.get_subexpressions` is outside the plugin interface (tested on mypy 1.20 and 2.x;
    mypy's compiled traversers cannot be subclassed here); should it move, no value is found, which
    silences these findings, never adds one.
    """
    try:
        from mypy.server.subexpr import get_subexpressions
    except ImportError:
        return []
    return get_subexpressions(tree)


def _type_of(api: CheckerPluginInterface, node: Expression) -> Type | None:
    """mypy's type of an expression it has checked, else None.

    `TypeChecker.lookup_type_or_none` is outside the plugin interface (tested on mypy 1.20 and 2.x); should it
    move, no type is ever known, which silences these findings, never adds one.
    """
    lookup = getattr(api, "lookup_type_or_none", None)
    return lookup(node) if callable(lookup) else None


def _includes_none(typ: Type) -> bool:
    proper = get_proper_type(typ)
    if isinstance(proper, UnionType):
        return any(_includes_none(item) for item in proper.items)
    if isinstance(proper, TypeVarType):
        return _includes_none(proper.upper_bound)
    return isinstance(proper, NoneType)


def _is_final(typ: Type) -> bool:
    proper = get_proper_type(typ)
    return not (isinstance(proper, AnyType) and proper.type_of_any in _UNSETTLED_ANY)
