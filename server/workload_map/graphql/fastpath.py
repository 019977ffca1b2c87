"""Fields read straight off the view adapters, without graphql-core's per-field machinery.

Why (issue 23 item 5): a page of 100 workloads with roles, instances and GPU figures is a
few thousand fields (``name``, ``replicas { desired }``, ``gpu { allocated }``...).
graphql-core executes each one by building a ``Path``, a ``GraphQLResolveInfo``, calling
strawberry's resolver wrapper (which builds an ``Info`` and binds arguments), checking the
object's type and completing the value: tens of microseconds per field for a value that
is one attribute read. The object types of ``workload_map.graphql.types`` read
precomputed, immutable views, so a field without arguments, ``info`` or field extensions
is a pure function of its source.

:class:`FastFields` (mixed into the schema's execution context) completes such a field
with a plan compiled once per (parent type, field node of the cached document): the read
(the attribute, or the resolver taking only ``self``) and the completion of its type:

* a leaf (scalar, enum): the type's own output coercion (``coerce_output_value``, as
  graphql-core's ``complete_leaf_value``);
* an object type: an instance of its strawberry class (what ``is_type_of`` checks) whose
  selection is itself planned field by field: plain fields only (no fragments, no
  directives, no arguments, each response name once; ``__typename`` is the type's name);
* a list (a ``list`` or ``tuple`` value) of either; ``None`` where the type is nullable.

Anything else (fields with arguments or ``info``, such as pod lists filtered by the
caller's pod access; interfaces, unions; a selection with fragments or directives) is
graphql-core's; and a planned field whose read fails, or gives a null where the schema
says non-null, a value of another class or one the type does not coerce anywhere in its
subtree, is handed to graphql-core whole, which then produces the answer and the error it
always did (the reads are pure, so reading twice changes nothing). So fast fields never
report errors: answers and errors are the same byte for byte, keys in selection order.
With a schema extension that wraps resolvers (a middleware), nothing is planned. The stop
event (``workload_map.graphql.stopping``) is checked before every field graphql-core
executes; a planned subtree runs to its end, bounded by the cost limit
(``workload_map.graphql.cost``): a page of 500 workloads with roles and instances is a few
tens of ms of it.
"""

from __future__ import annotations

import operator
import types
from collections.abc import Callable
from typing import Any

from graphql import (
    FieldNode,
    GraphQLEnumType,
    GraphQLField,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLScalarType,
    SelectionSetNode,
    Undefined,
)
from graphql.pyutils import is_awaitable
from strawberry.schema.schema_converter import GraphQLCoreConverter
from strawberry.types.field import StrawberryField

from workload_map.graphql.stopping import StoppableExecution

Getter = Callable[[Any], Any]
Complete = Callable[[Any], Any]
Plan = tuple[Getter, Complete]
"""(read the value off the source, complete it as its type)."""

MAX_PLANS = 4096
"""Field plans kept (one per field node of the cached documents); beyond, the table restarts."""

_PLANS: dict[tuple[int, int], tuple[GraphQLObjectType, FieldNode, Plan | None]] = {}


class NotFast(Exception):
    """A planned read cannot complete the value: graphql-core executes the field."""


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


def _leaf(of_type: GraphQLScalarType | GraphQLEnumType) -> Complete:
    coerce = of_type.coerce_output_value

    def complete(value: Any) -> Any:
        coerced = coerce(value)
        if coerced is None:
            raise NotFast
        return coerced
    return complete


def _object(of_type: GraphQLObjectType, selection: SelectionSetNode) -> Complete | None:
    origin = getattr((of_type.extensions or {}).get(GraphQLCoreConverter.DEFINITION_BACKREF), "origin", None)
    fields = _selection(of_type, selection)
    if not isinstance(origin, type) or fields is None:
        return None

    def complete(value: Any) -> Any:
        if not isinstance(value, origin):
            raise NotFast
        return {key: done(read(value)) for key, read, done in fields}
    return complete


def _list(item: Complete) -> Complete:
    def complete(value: Any) -> Any:
        if not isinstance(value, (list, tuple)):
            raise NotFast
        return [item(v) for v in value]
    return complete


def _non_null(inner: Complete) -> Complete:
    def complete(value: Any) -> Any:
        if value is None:
            raise NotFast
        return inner(value)
    return complete


def _nullable(inner: Complete) -> Complete:
    def complete(value: Any) -> Any:
        return None if value is None else inner(value)
    return complete


def _completion(of_type: GraphQLOutputType, selection: SelectionSetNode | None) -> Complete | None:
    """How to complete a value of ``of_type`` with ``selection`` (None: not planned)."""
    nullable = not isinstance(of_type, GraphQLNonNull)
    named: Any = of_type if nullable else of_type.of_type  # type: ignore[union-attr]
    inner: Complete | None
    if isinstance(named, (GraphQLScalarType, GraphQLEnumType)):
        inner = _leaf(named) if selection is None else None
    elif isinstance(named, GraphQLList):
        item = _completion(named.of_type, selection)
        inner = None if item is None else _list(item)
    elif isinstance(named, GraphQLObjectType) and selection is not None:
        inner = _object(named, selection)
    else:
        inner = None
    if inner is None:
        return None
    return _nullable(inner) if nullable else _non_null(inner)


def _field(parent: GraphQLObjectType, node: FieldNode) -> Plan | None:
    """The plan of one field of ``parent`` (None: graphql-core executes it)."""
    name = node.name.value
    if name == "__typename":
        type_name = parent.name
        return (lambda _: type_name, lambda value: value) if node.selection_set is None else None
    definition: GraphQLField | None = parent.fields.get(name)
    if definition is None or definition.args or node.arguments:
        return None
    field = (definition.extensions or {}).get(GraphQLCoreConverter.DEFINITION_BACKREF)
    getter = _getter(field) if isinstance(field, StrawberryField) else None
    complete = None if getter is None else _completion(definition.type, node.selection_set)
    return None if getter is None or complete is None else (getter, complete)


def _selection(parent: GraphQLObjectType, selection: SelectionSetNode) -> list[tuple[str, Getter, Complete]] | None:
    """Plans of every field of a plain selection (module doc), or None."""
    fields: list[tuple[str, Getter, Complete]] = []
    seen: set[str] = set()
    for node in selection.selections:
        if not isinstance(node, FieldNode) or node.directives:
            return None
        key = (node.alias or node.name).value
        planned = _field(parent, node)
        if planned is None or key in seen:
            return None
        seen.add(key)
        fields.append((key, *planned))
    return fields


def plan(parent: GraphQLObjectType, node: FieldNode) -> Plan | None:
    """The plan of ``node`` (a field of ``parent``), compiled once (module doc)."""
    key = (id(parent), id(node))
    found = _PLANS.get(key)
    if found is not None and found[0] is parent and found[1] is node:
        return found[2]
    if len(_PLANS) >= MAX_PLANS:
        _PLANS.clear()
    planned = _field(parent, node)
    _PLANS[key] = (parent, node, planned)  # the nodes are kept: their ids stay theirs
    return planned


class FastFields:
    """Execution-context mixin: planned fields (module doc) in ``execute_fields``.

    Mixed before graphql-core's execution context class; ``middleware_manager`` and
    ``execute_fields`` are graphql-core's.
    """

    middleware_manager: Any

    def execute_fields(self, parent_type: GraphQLObjectType, source_value: Any, path: Any,
                       grouped_field_set: dict[str, Any], position_context: Any) -> Any:
        """Planned fields here, every other field through graphql-core, keys in selection order."""
        base = super().execute_fields  # type: ignore[misc]
        middleware = self.middleware_manager
        if middleware is not None and middleware.middlewares:
            return base(parent_type, source_value, path, grouped_field_set, position_context)
        results: dict[str, Any] = {}
        rest: dict[str, Any] = {}
        for key, details in grouped_field_set.items():
            planned = plan(parent_type, details[0].node) if len(details) == 1 else None
            value = Undefined
            if planned is not None:
                try:
                    value = planned[1](planned[0](source_value))
                except Exception:  # noqa: BLE001 - graphql-core executes it and reports what failed
                    value = Undefined
            if value is Undefined:
                rest[key] = details
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


class FastExecution(FastFields, StoppableExecution):
    """The schema's execution context: planned fields over the stoppable execution."""
