"""Leaf fields read straight off the view adapters, without graphql-core's per-field machinery.

Why (issue 23 item 5): a page of 100 workloads with roles, instances and GPU figures is a
few thousand fields, nearly all of them leaves (``name``, ``desired``, ``allocated``...).
graphql-core executes each one by building a ``Path``, a ``GraphQLResolveInfo``, calling
strawberry's resolver wrapper (which builds an ``Info`` and binds arguments) and completing
the value: tens of microseconds per field for a value that is one attribute read. The
object types of ``workload_map.graphql.types`` read precomputed, immutable views, so a leaf
field without arguments, ``info`` or field extensions is a pure function of its source.

:class:`FastLeaves` (mixed into the schema's execution context) computes such fields with
that function and the leaf type's own output coercion (``coerce_output_value``, exactly as
graphql-core's ``complete_leaf_value``), and hands every other field (objects, lists,
fields with arguments or ``info``, and any leaf whose fast read fails or gives no value)
to graphql-core unchanged, so answers and errors are the same byte for byte; the keys keep
the order of the selection. With a schema extension that wraps resolvers (a middleware),
nothing is taken off graphql-core's path.
"""

from __future__ import annotations

import operator
import types
from collections.abc import Callable
from typing import Any

from graphql import GraphQLEnumType, GraphQLField, GraphQLNonNull, GraphQLObjectType, GraphQLScalarType, Undefined
from graphql.pyutils import is_awaitable
from strawberry.schema.schema_converter import GraphQLCoreConverter
from strawberry.types.field import StrawberryField

from workload_map.graphql.stopping import StoppableExecution

Getter = Callable[[Any], Any]
Leaf = tuple[Getter, GraphQLScalarType | GraphQLEnumType, bool]
"""(read the value off the source, the leaf type, nullable)."""

_PLANS: dict[GraphQLObjectType, dict[str, Leaf]] = {}


def _getter(field: StrawberryField) -> Getter | None:
    """A pure function of the source computing ``field``, or None when it needs more."""
    if field.extensions or field.arguments:
        return None
    resolver = field.base_resolver
    if resolver is None:
        return operator.attrgetter(field.python_name)
    if resolver.is_async or len(resolver.signature.parameters) != 1 or "self" not in resolver.signature.parameters:
        return None
    func = resolver.wrapped_func
    return func if isinstance(func, types.FunctionType) else None


def _leaf(definition: GraphQLField) -> Leaf | None:
    """The fast plan of one field, or None (graphql-core executes it)."""
    if definition.args:
        return None
    field = (definition.extensions or {}).get(GraphQLCoreConverter.DEFINITION_BACKREF)
    if not isinstance(field, StrawberryField):
        return None
    of_type, nullable = definition.type, True
    if isinstance(of_type, GraphQLNonNull):
        of_type, nullable = of_type.of_type, False
    if not isinstance(of_type, (GraphQLScalarType, GraphQLEnumType)):
        return None
    getter = _getter(field)
    return None if getter is None else (getter, of_type, nullable)


def plan(parent: GraphQLObjectType) -> dict[str, Leaf]:
    """The fast leaves of ``parent`` by field name (built once per type)."""
    found = _PLANS.get(parent)
    if found is None:
        found = {}
        for name, definition in parent.fields.items():
            leaf = _leaf(definition)
            if leaf is not None:
                found[name] = leaf
        _PLANS[parent] = found
    return found


def read(leaf: Leaf, source: Any) -> Any:
    """The completed value of a fast leaf; ``Undefined`` when graphql-core must execute it.

    ``Undefined`` for a failing read, a null for a non-null field or a value the type does
    not coerce: graphql-core's own path then produces the error it always did.
    """
    getter, of_type, nullable = leaf
    try:
        value = getter(source)
        if value is None:
            return None if nullable else Undefined
        coerced = of_type.coerce_output_value(value)
    except Exception:  # noqa: BLE001 - graphql-core reports it
        return Undefined
    return Undefined if coerced is None else coerced


class FastLeaves:
    """Execution-context mixin: fast leaves (module doc) in ``execute_fields``.

    Mixed before graphql-core's execution context class; ``middleware_manager`` and
    ``execute_fields`` are graphql-core's.
    """

    middleware_manager: Any

    def execute_fields(self, parent_type: GraphQLObjectType, source_value: Any, path: Any,
                       grouped_field_set: dict[str, Any], position_context: Any) -> Any:
        """Fast leaves here, every other field through graphql-core, keys in selection order."""
        base = super().execute_fields  # type: ignore[misc]
        leaves = plan(parent_type)
        middleware = self.middleware_manager
        if not leaves or (middleware is not None and middleware.middlewares):
            return base(parent_type, source_value, path, grouped_field_set, position_context)
        results: dict[str, Any] = {}
        rest: dict[str, Any] = {}
        for key, details in grouped_field_set.items():
            leaf = leaves.get(details[0].node.name.value)
            value = Undefined if leaf is None or details[0].node.arguments else read(leaf, source_value)
            if value is Undefined:
                rest[key] = details
                results[key] = Undefined
            else:
                results[key] = value
        if not rest:
            return results
        done = base(parent_type, source_value, path, rest, position_context)
        if is_awaitable(done):
            async def merged() -> dict[str, Any]:
                return _merge(results, await done)
            return merged()
        return _merge(results, done)


def _merge(results: dict[str, Any], done: dict[str, Any]) -> dict[str, Any]:
    """``results`` with graphql-core's values in their places (a field it skipped dropped)."""
    return {key: done[key] if value is Undefined else value for key, value in results.items()
            if value is not Undefined or key in done}


class FastExecution(FastLeaves, StoppableExecution):
    """The schema's execution context: fast leaves over the stoppable execution."""
