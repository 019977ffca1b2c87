"""GraphQL query cost, computed before validation in time linear in the document.

The cost of an operation is the number of fields it would resolve with every fragment
spread expanded: each field counts 1, and a field with a ``first`` argument (a page, such
as ``workloads``) multiplies the cost of its selection by that page size (the literal, the
variable's value, the variable's default, else the argument's default in the schema).
Variables are priced as execution will see them: coerced by graphql-core's own
``get_variable_values`` (so ``{"n": 500.0}`` for an ``Int`` is 500, as it runs, not the
default); variables that do not coerce fail the operation anyway and are priced at their
defaults.
Other list fields (``roles``, ``pods``) count their selection once: their lengths are
data, bounded by the resolver, while the page size is the caller's choice.

Each fragment's cost is computed once and memoised, so a chain of 40 fragments that each
spread the previous one twice takes 40 steps to price and is refused (its cost is about
2^40) instead of expanding for minutes. Alongside the cost the walk refuses, each with a
message naming the limit:

* fragment cycles (GraphQL spec, "Fragment spreads must not form cycles",
  https://spec.graphql.org/October2021/#sec-Fragment-spreads-must-not-form-cycles);
* more than ``max_spreads`` fragment spreads in the document;
* one response name selected more than ``max_same_field`` times in one selection set:
  graphql-core's OverlappingFieldsCanBeMergedRule compares such fields pairwise, which is
  quadratic (1,000 copies of ``definitions { name }`` validate in 2.5 s on one core);
* several operations without ``operationName`` (spec, "GetOperation",
  https://spec.graphql.org/October2021/#GetOperation()).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLObjectType,
    GraphQLSchema,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    VariableNode,
    get_named_type,
)

from graphql.execution.values import VariableValues, get_variable_values
from msgspec import Struct

from workload_map.service.pagination import MAX_PAGE_SIZE

DEFAULT_MAX_COST = 100_000
"""Same figure as ``workload_map.config.DEFAULT_GRAPHQL_MAX_COST`` (a test keeps them equal)."""
DEFAULT_MAX_SPREADS = 64
DEFAULT_MAX_SAME_FIELD = 20
_CAP = 10**18
"""Costs saturate here: beyond every budget, and the integers stay small."""
_MAX_NESTING = 64
"""Selection sets deeper than this are refused outright (the depth rule allows 15)."""


class CostLimits(Struct, frozen=True):
    """Budgets of one server (``settings.http``)."""

    max_cost: int = DEFAULT_MAX_COST
    max_spreads: int = DEFAULT_MAX_SPREADS
    max_same_field: int = DEFAULT_MAX_SAME_FIELD


class QueryRefused(Exception):
    """An operation refused before validation; ``code`` is the GraphQL error code."""

    def __init__(self, code: str, message: str, **extensions: Any) -> None:
        super().__init__(message)
        self.code = code
        self.extensions = {"code": code, **extensions}


def select_operation(document: DocumentNode, operation_name: str | None) -> OperationDefinitionNode | None:
    """The operation to run (None when ``operation_name`` names none: validation reports it).

    Raises:
        QueryRefused: several operations and no ``operation_name``.
    """
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    if operation_name is None:
        if len(operations) > 1:
            raise QueryRefused("OPERATION_NAME_REQUIRED", f"the document holds {len(operations)} operations: "
                               "give operationName to choose the one to run")
        return operations[0] if operations else None
    return next((o for o in operations if o.name is not None and o.name.value == operation_name), None)


class _Pricer:
    """One walk over one operation and the fragments it reaches."""

    def __init__(self, schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode,
                 variables: Mapping[str, Any], limits: CostLimits) -> None:
        self.schema, self.limits, self.variables = schema, limits, variables
        self.fragments = {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}
        self.defaults = {v.variable.name.value: v.default_value for v in operation.variable_definitions or ()}
        self.memo: dict[str, tuple[int, dict[str, int]]] = {}
        self.active: list[str] = []

    def selection(self, node: SelectionSetNode | None, parent: Any, depth: int) -> tuple[int, dict[str, int]]:
        """(cost, response-name counts of the fields collected at this level)."""
        if node is None:
            return 0, {}
        if depth > _MAX_NESTING:
            raise QueryRefused("QUERY_TOO_DEEP", f"selections are nested more than {_MAX_NESTING} levels deep")
        cost = 0
        names: dict[str, int] = {}
        for item in node.selections:
            if isinstance(item, FieldNode):
                cost += self.field(item, parent, depth)
                key = (item.alias or item.name).value
                names[key] = names.get(key, 0) + 1
            else:
                if isinstance(item, FragmentSpreadNode):
                    sub_cost, sub_names = self.spread(item, depth)
                else:  # graphql-core's third kind of SelectionNode: an inline fragment
                    inline = cast(InlineFragmentNode, item)
                    sub_cost, sub_names = self.selection(inline.selection_set, self.type_of(inline, parent), depth)
                cost += sub_cost
                for key, count in sub_names.items():
                    names[key] = min(names.get(key, 0) + count, _CAP)
            cost = min(cost, _CAP)
        self.check_repeats(names)
        return cost, names

    def field(self, node: FieldNode, parent: Any, depth: int) -> int:
        definition = parent.fields.get(node.name.value) if isinstance(parent, GraphQLObjectType) else None
        child = get_named_type(definition.type) if definition is not None else None
        sub_cost, _ = self.selection(node.selection_set, child, depth + 1)
        return min(1 + self.page_size(node, definition) * sub_cost, _CAP)

    def page_size(self, node: FieldNode, definition: Any) -> int:
        """The ``first`` of a paged field (1 for every other field), at most ``MAX_PAGE_SIZE``."""
        if definition is None or "first" not in definition.args:
            return 1
        given: object = next((a.value for a in node.arguments or () if a.name.value == "first"), None)
        if isinstance(given, VariableNode):
            name = given.name.value
            value = self.variables.get(name)
            given = value if isinstance(value, int) and not isinstance(value, bool) else self.defaults.get(name)
        if isinstance(given, IntValueNode):
            given = int(given.value)
        if not isinstance(given, int):
            given = definition.args["first"].default_value
        if not isinstance(given, int) or isinstance(given, bool):
            return 1
        return min(max(1, given), MAX_PAGE_SIZE)  # beyond: the resolver's page-size check names the range

    def spread(self, node: FragmentSpreadNode, depth: int) -> tuple[int, dict[str, int]]:
        name = node.name.value
        if name in self.active:
            cycle = " -> ".join([*self.active[self.active.index(name):], name])
            raise QueryRefused("FRAGMENT_CYCLE", f"fragment spreads form a cycle: {cycle}")
        if name not in self.memo:
            fragment = self.fragments.get(name)
            if fragment is None:
                return 0, {}  # unknown fragment: validation names it
            self.active.append(name)
            condition = self.schema.get_type(fragment.type_condition.name.value)
            self.memo[name] = self.selection(fragment.selection_set, condition, depth)
            self.active.pop()
        return self.memo[name]

    def type_of(self, node: InlineFragmentNode, parent: Any) -> Any:
        if node.type_condition is None:
            return parent
        return self.schema.get_type(node.type_condition.name.value)

    def check_repeats(self, names: dict[str, int]) -> None:
        for key, count in names.items():
            if count > self.limits.max_same_field:
                raise QueryRefused("FIELD_REPEATED", f"{key!r} is selected {count} times in one selection set; the "
                                   f"limit is {self.limits.max_same_field}", limit=self.limits.max_same_field)


def spread_count(document: DocumentNode) -> int:
    """Fragment spreads written in the document (each occurrence, not expanded)."""
    count, stack = 0, [d.selection_set for d in document.definitions if hasattr(d, "selection_set")]
    while stack:
        node = stack.pop()
        for item in node.selections if node is not None else ():
            if isinstance(item, FragmentSpreadNode):
                count += 1
            elif item.selection_set is not None:
                stack.append(item.selection_set)
    return count


def coerced_variables(schema: GraphQLSchema, operation: OperationDefinitionNode,
                      variables: Mapping[str, Any]) -> Mapping[str, Any]:
    """The operation's variables coerced as execution coerces them (defaults applied).

    The raw ``variables`` when they do not coerce: execution then refuses the operation.
    """
    try:
        values = get_variable_values(schema, operation.variable_definitions or (), dict(variables), max_errors=1)
    except (TypeError, ValueError, RecursionError):
        return variables
    return values.coerced if isinstance(values, VariableValues) else variables


MAX_PRICED = 256
"""Prices kept (:func:`operation_cost`); beyond, the table restarts."""

_PRICED: dict[tuple[Any, ...], tuple[DocumentNode, GraphQLSchema, int | QueryRefused]] = {}
_FIRST_VARIABLES: dict[int, tuple[DocumentNode, frozenset[str]]] = {}


def first_variables(document: DocumentNode) -> frozenset[str]:
    """Names of the variables given as a ``first`` argument anywhere in ``document``."""
    found = _FIRST_VARIABLES.get(id(document))
    if found is not None and found[0] is document:
        return found[1]
    names: set[str] = set()
    stack = [d.selection_set for d in document.definitions if hasattr(d, "selection_set")]
    while stack:
        node = stack.pop()
        for item in node.selections if node is not None else ():
            for argument in getattr(item, "arguments", None) or ():
                if argument.name.value == "first" and isinstance(argument.value, VariableNode):
                    names.add(argument.value.name.value)
            if getattr(item, "selection_set", None) is not None:
                stack.append(item.selection_set)
    if len(_FIRST_VARIABLES) >= MAX_PRICED:
        _FIRST_VARIABLES.clear()
    _FIRST_VARIABLES[id(document)] = (document, frozenset(names))
    return frozenset(names)


def operation_cost(schema: GraphQLSchema, document: DocumentNode, *, operation_name: str | None = None,
                   variables: Mapping[str, Any] | None = None, limits: CostLimits = CostLimits()) -> int:
    """The fragment-expanded field count of the operation that would run (see module doc).

    Priced once per (document, operation name, limits) and, when a variable gives a page
    size (``first: $n``), per the variables' values (their coercion decides the price):
    the documents come from the parser cache, so a repeated query is not walked again.

    Returns:
        The cost (saturated at 10^18); 0 when no operation is selected.

    Raises:
        QueryRefused: over a limit (cost, spreads, repeats, cycles, operation name); the
            message states the figure and the limit.
    """
    given = variables or {}
    values = tuple(sorted((k, repr(v)) for k, v in given.items())) if first_variables(document) else ()
    key = (id(document), id(schema), operation_name, limits, values)
    held = _PRICED.get(key)
    if held is None or held[0] is not document or held[1] is not schema:
        try:
            priced: int | QueryRefused = _price(schema, document, operation_name, given, limits)
        except QueryRefused as exc:
            priced = exc
        if len(_PRICED) >= MAX_PRICED:
            _PRICED.clear()
        held = _PRICED[key] = (document, schema, priced)
    if isinstance(held[2], QueryRefused):
        first = held[2]
        raise QueryRefused(first.code, str(first), **{k: v for k, v in first.extensions.items() if k != "code"})
    return held[2]


def _price(schema: GraphQLSchema, document: DocumentNode, operation_name: str | None,
           variables: Mapping[str, Any], limits: CostLimits) -> int:
    """:func:`operation_cost` without the table."""
    spreads = spread_count(document)
    if spreads > limits.max_spreads:
        raise QueryRefused("TOO_MANY_FRAGMENT_SPREADS", f"the document holds {spreads} fragment spreads; the limit "
                           f"is {limits.max_spreads}", limit=limits.max_spreads)
    operation = select_operation(document, operation_name)
    if operation is None:
        return 0
    root = schema.get_root_type(operation.operation)
    coerced = coerced_variables(schema, operation, variables)
    cost, _ = _Pricer(schema, document, operation, coerced, limits).selection(operation.selection_set, root, 1)
    if cost > limits.max_cost:
        shown = f"{cost:,}" if cost < _CAP else f"more than {_CAP:,}"
        raise QueryRefused("QUERY_TOO_EXPENSIVE", f"the query would resolve {shown} fields (pages expanded); the "
                           f"limit is {limits.max_cost:,}: ask for smaller pages (first) or fewer fields",
                           cost=min(cost, _CAP), limit=limits.max_cost)
    return cost
