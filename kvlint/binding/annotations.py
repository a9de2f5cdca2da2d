"""Tell whether a type annotation spells `KVConnectorOutput` or its Optional.

`kvlint.binding.declarations.type_of_annotation` reads every spelling (`Optional[X]`,
`X | None`, `Union[X, None]`, string annotations, `typing.` prefixes, import
aliases); this module only asks it whether the payload class is what is declared.
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Callable, Iterable

from kvlint.binding.declarations import type_of_annotation
from kvlint.binding.names import matches

Resolver = Callable[[str], str]


class AnnotationKind(enum.Enum):
    """What an annotation says about a value."""

    PAYLOAD = "payload"  # KVConnectorOutput
    OPTIONAL_PAYLOAD = "optional-payload"  # KVConnectorOutput | None


def classify_annotation(
    node: ast.expr | None, resolve: Resolver, payload_classes: Iterable[str]
) -> AnnotationKind | None:
    """Classify an annotation; None when it is neither the payload nor its Optional."""
    declared = type_of_annotation(node, resolve)
    if declared is None or declared.kind != "class" or not matches(declared.name, tuple(payload_classes)):
        return None
    return AnnotationKind.OPTIONAL_PAYLOAD if declared.optional else AnnotationKind.PAYLOAD
