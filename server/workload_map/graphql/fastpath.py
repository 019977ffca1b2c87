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

An object's selection is completed by one function generated for it (:func:`_compiled`):
attribute reads inline, and a leaf of a specified scalar (``String``, ``Int``, ``Float``,
``Boolean``) returned as read where graphql-core's coercion would return it unchanged.

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

import keyword
import operator
import re
import types
from collections.abc import Callable
from typing import Any

from graphql import (
    FieldNode,
    GraphQLBoolean,
    GraphQLFloat,
    GraphQLInt,
    GraphQLString,
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
Leaf = tuple[Callable[[Any], Any], bool]
"""(the output coercion of a scalar or enum, nullable)."""
Parts = tuple[Getter, Complete, Leaf | None]
"""A :data:`Plan` and, for a leaf, its :data:`Leaf` (what the generated completion inlines)."""

MAX_PLANS = 4096
"""Field plans kept (one per field node of the cached documents); beyond, the table restarts."""

_ATTRIBUTE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
"""A Python identifier (ASCII): the attribute names the generated completion reads inline."""

_PLANS: dict[tuple[int, int], tuple[GraphQLObjectType, FieldNode, Parts | None]] = {}


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


def _attribute(read: Getter) -> str | None:
    """The attribute an ``operator.attrgetter`` of one plain name reads (its pickling arguments), else None."""
    if not isinstance(read, operator.attrgetter):
        return None
    names = read.__reduce__()[1]
    name = names[0] if len(names) == 1 else None
    return name if isinstance(name, str) and _ATTRIBUTE.match(name) and not keyword.iskeyword(name) else None


def _leaf(of_type: GraphQLScalarType | GraphQLEnumType) -> Complete:
    coerce = of_type.coerce_output_value

    def complete(value: Any) -> Any:
        coerced = coerce(value)
        if coerced is None:
            raise NotFast
        return coerced
    return complete


_STANDARD_LEAF = {
    GraphQLString.coerce_output_value: "v.__class__ is str",
    GraphQLInt.coerce_output_value: "v.__class__ is int and -2147483648 <= v <= 2147483647",
    GraphQLFloat.coerce_output_value: "v.__class__ is float and v - v == 0.0",
    GraphQLBoolean.coerce_output_value: "v.__class__ is bool",
}
"""Output coercions of the specified scalars -> the test on a value ``v`` under which the
coercion returns ``v`` itself (graphql-core's ``serialize_string``, ``serialize_int``: an
``int`` in the 32-bit range; ``serialize_float``: a finite ``float``; ``serialize_boolean``).
Any other value goes through the coercion."""

def _object(of_type: GraphQLObjectType, selection: SelectionSetNode) -> Complete | None:
    origin = getattr((of_type.extensions or {}).get(GraphQLCoreConverter.DEFINITION_BACKREF), "origin", None)
    fields = _selection(of_type, selection)
    if not isinstance(origin, type) or fields is None:
        return None
    return _compiled(of_type.name, origin, fields)


def _compiled(type_name: str, origin: type, fields: list[tuple[str, Getter, Complete, Leaf | None]]) -> Complete:
    """The completion of an object of class ``origin`` with ``fields``, as one generated function.

    The same reads and completions as a dict comprehension over ``fields`` (keys in
    selection order, :class:`NotFast` where a read value cannot complete), written out
    field by field: an attribute read inline, a leaf of a specified scalar returned as
    read when its coercion would return it unchanged (:data:`_STANDARD_LEAF`), every
    other value through its completion. A page of 100 workloads completes some ten
    thousand fields; the comprehension's tuple unpacking and the two or three closure
    calls per leaf were half of it. The source holds only generated names and
    ``repr()`` of response keys (GraphQL names); schema values are passed as globals.
    """
    scope: dict[str, Any] = {"NotFast": NotFast, "origin": origin}
    lines = ["def complete(value):", "    if not isinstance(value, origin):", "        raise NotFast"]
    keys = []
    for i, (key, read, done, leaf) in enumerate(fields):
        attribute = _attribute(read)
        if attribute is not None:
            lines.append(f"    v = value.{attribute}")
        else:
            scope[f"r{i}"] = read
            lines.append(f"    v = r{i}(value)")
        if leaf is None:
            scope[f"d{i}"] = done
            lines.append(f"    x{i} = d{i}(v)")
        else:
            coerce, nullable = leaf
            scope[f"c{i}"] = coerce
            fast = _STANDARD_LEAF.get(coerce)
            passed = " or ".join(test for test in (fast, "v is None" if nullable else None) if test)
            if passed:
                lines += [f"    if {passed}:", f"        x{i} = v", "    else:"]
                indent = "        "
            else:
                indent = "    "
            if not nullable:
                lines += [f"{indent}if v is None:", f"{indent}    raise NotFast"]
            lines += [f"{indent}x{i} = c{i}(v)", f"{indent}if x{i} is None:", f"{indent}    raise NotFast"]
        keys.append(f"{key!r}: x{i}")
    lines.append("    return {" + ", ".join(keys) + "}")
    exec(compile("\n".join(lines), f"<fast completion of {type_name}>", "exec"), scope)  # noqa: S102 - generated above
    complete: Complete = scope["complete"]
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


def _leaf_of(of_type: GraphQLOutputType, selection: SelectionSetNode | None) -> Leaf | None:
    """``(output coercion, nullable)`` of a leaf type (scalar or enum without a selection), else None."""
    nullable = not isinstance(of_type, GraphQLNonNull)
    named: Any = of_type if nullable else of_type.of_type  # type: ignore[union-attr]
    if selection is None and isinstance(named, (GraphQLScalarType, GraphQLEnumType)):
        return named.coerce_output_value, nullable
    return None


def _field_parts(parent: GraphQLObjectType, node: FieldNode) -> Parts | None:
    """The read, completion and leaf coercion of one field of ``parent`` (None: graphql-core executes it)."""
    name = node.name.value
    if name == "__typename":
        type_name = parent.name
        return (lambda _: type_name, _same, None) if node.selection_set is None else None
    definition: GraphQLField | None = parent.fields.get(name)
    if definition is None or definition.args or node.arguments:
        return None
    field = (definition.extensions or {}).get(GraphQLCoreConverter.DEFINITION_BACKREF)
    getter = _getter(field) if isinstance(field, StrawberryField) else None
    complete = None if getter is None else _completion(definition.type, node.selection_set)
    if getter is None or complete is None:
        return None
    return getter, complete, _leaf_of(definition.type, node.selection_set)


def _same(value: Any) -> Any:
    return value


def _selection(parent: GraphQLObjectType,
               selection: SelectionSetNode) -> list[tuple[str, Getter, Complete, Leaf | None]] | None:
    """Parts of every field of a plain selection (module doc), or None."""
    fields: list[tuple[str, Getter, Complete, Leaf | None]] = []
    seen: set[str] = set()
    for node in selection.selections:
        if not isinstance(node, FieldNode) or node.directives:
            return None
        key = (node.alias or node.name).value
        parts = plan(parent, node)
        if parts is None or key in seen:
            return None
        seen.add(key)
        fields.append((key, *parts))
    return fields


def plan(parent: GraphQLObjectType, node: FieldNode) -> Parts | None:
    """The parts of ``node`` (a field of ``parent``): its :data:`Plan` and leaf coercion, compiled once (module doc).

    Every field node is planned once, whatever its depth: a selection that cannot be
    planned below (a field taking ``info``) is not planned again at every level above it
    as graphql-core executes down to it.
    """
    key = (id(parent), id(node))
    found = _PLANS.get(key)
    if found is not None and found[0] is parent and found[1] is node:
        return found[2]
    if len(_PLANS) >= MAX_PLANS:
        _PLANS.clear()
    parts = _field_parts(parent, node)
    _PLANS[key] = (parent, node, parts)  # the nodes are kept: their ids stay theirs
    return parts


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
