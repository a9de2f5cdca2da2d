"""The flow analysis, in parts a reader finds by name.

It tracks names and member-access chains (`kvo`, `out.kv_connector_output`,
`self.kv_connector_output`) the way type checkers narrow them: a narrowing
lasts until the expression or a prefix of it is assigned. Joins are "may":
a value that may be None on any incoming path may be None after the join.
Values it knows nothing about are untracked and never reported (precision
first). Its output is a list of `Site`s; it reports nothing itself.

- `state`: the abstract values and states, and their joins;
- `syntax`: reference keys, literals, patterns, arguments and parameters of `ast` nodes;
- `context`: `FlowContext`, the state the parts share while they analyse one module, declared once;
- `expressions`, `narrowing`, `statements`: the transfer functions (`Expressions`, `Narrowing`, `Statements`);
- `recording`: `Recorder`, the sites the rules read;
- `analysis`: `FlowAnalysis`, which builds the context and the parts, says which part calls which,
  and walks every scope of a module, a batch of top-level statements at a time (`source.parsed_batches`).

The parts are plain classes: each receives the `FlowContext` and the parts it calls as attributes,
so a call from one part to another names its target (`self.expressions.eval(...)`).
"""

from kvlint.flow.analysis import FlowAnalysis

__all__ = ["FlowAnalysis"]
