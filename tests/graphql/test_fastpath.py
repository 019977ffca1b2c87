"""Fast leaves (``workload_map.graphql.fastpath``): the same answers and errors as graphql-core's path.

A small strawberry schema is executed twice, with the fast execution context and with the
plain stoppable one; the answers (data, key order, errors with their paths) must be equal,
and the values are the ones worked out by hand below.
"""

from __future__ import annotations

import json
from enum import Enum
from typing import Any

import strawberry
from strawberry.types import Info

from graphql import parse

from workload_map.graphql.fastpath import FastExecution, plan
from workload_map.graphql.stopping import StoppableExecution


@strawberry.enum
class Colour(Enum):
    RED = "RED"
    BLUE = "BLUE"


@strawberry.type
class Item:
    name: str
    size: int
    missing: strawberry.Private[str | None]
    colour: Colour

    @strawberry.field
    def doubled(self) -> int:
        return self.size * 2

    @strawberry.field
    def required(self) -> str:  # None at run time: graphql-core's non-null error
        return self.missing  # type: ignore[return-value]

    @strawberry.field
    def scaled(self, by: int) -> int:
        return self.size * by

    @strawberry.field
    def context_name(self, info: Info) -> str:
        return f"{info.context['who']}:{self.name}"

    @strawberry.field
    def child(self) -> Item | None:
        return Item(name=self.name + "-child", size=self.size + 1, missing=None, colour=Colour.BLUE) if self.size < 3 else None


@strawberry.type
class Query:
    @strawberry.field
    def items(self) -> list[Item]:
        return [Item(name="a", size=1, missing="x", colour=Colour.RED),
                Item(name="b", size=3, missing=None, colour=Colour.BLUE)]


QUERY = """{ items { doubled n: name colour scaled(by: 10) contextName name
  child { name size doubled colour } } }"""


def answer(execution: type[Any], query: str) -> str:
    schema = strawberry.Schema(query=Query, execution_context_class=execution)
    result = schema.execute_sync(query, context_value={"who": "me"})
    errors = [{"message": e.message, "path": e.path} for e in result.errors or []]
    return json.dumps({"data": result.data, "errors": errors})


def test_the_same_answer_in_the_same_key_order() -> None:
    fast = answer(FastExecution, QUERY)
    assert fast == answer(StoppableExecution, QUERY)
    # a: size 1 -> doubled 2, scaled 10; its child a-child has size 2 -> doubled 4 (colour BLUE);
    # b: size 3 -> doubled 6, scaled 30 and no child (size >= 3).
    items = json.loads(fast)["data"]["items"]
    assert list(items[0]) == ["doubled", "n", "colour", "scaled", "contextName", "name", "child"]
    assert items[0] == {"doubled": 2, "n": "a", "colour": "RED", "scaled": 10, "contextName": "me:a", "name": "a",
                        "child": {"name": "a-child", "size": 2, "doubled": 4, "colour": "BLUE"}}
    assert (items[1]["doubled"], items[1]["scaled"], items[1]["child"]) == (6, 30, None)


def test_a_null_for_a_non_null_leaf_gets_graphql_cores_error() -> None:
    query = "{ items { name required size } }"
    fast = answer(FastExecution, query)
    assert fast == answer(StoppableExecution, query)
    # item b has no value for the non-null `required`: the null propagates through the
    # non-null Item! and [Item!]! up to data (null), with one error at items[1].required.
    got = json.loads(fast)
    assert got["data"] is None
    assert [e["path"] for e in got["errors"]] == [["items", 1, "required"]]


def planned(query: str) -> list[str]:
    """Response names of the ``items`` selection that are planned (not left to graphql-core)."""
    schema = strawberry.Schema(query=Query)
    item = schema._schema.type_map["Item"]
    document = parse(query)
    items = document.definitions[0].selection_set.selections[0]  # type: ignore[attr-defined]
    return [(n.alias or n.name).value for n in items.selection_set.selections if plan(item, n) is not None]


def test_only_pure_fields_are_planned() -> None:
    # name, size, colour: plain attributes; doubled, required: resolvers of self alone;
    # child: an object whose selection is planned. scaled (an argument) and contextName
    # (info) stay with graphql-core, and so does a child selecting either.
    assert planned(QUERY) == ["doubled", "n", "colour", "name", "child"]
    assert planned("{ items { child { name contextName } child2: child { size } } }") == ["child2"]
    # a fragment, a directive or a response name twice inside the selection: not planned
    assert planned("{ items { child { ...F } } } fragment F on Item { name }") == []
    assert planned("{ items { child { name @include(if: true) } } }") == []
    assert planned("{ items { child { name name } } }") == []


def test_a_planned_object_that_cannot_complete_is_graphql_cores() -> None:
    # a-child has no `required` (non-null): the planned `child` falls back whole, and
    # graphql-core nulls the nullable child of items[0] with one error at its path.
    query = "{ items { name child { __typename name required } } }"
    fast = answer(FastExecution, query)
    assert fast == answer(StoppableExecution, query)
    got = json.loads(fast)
    assert got["data"]["items"] == [{"name": "a", "child": None}, {"name": "b", "child": None}]
    assert [e["path"] for e in got["errors"]] == [["items", 0, "child", "required"]]


def test_typename_and_nested_objects_are_the_same() -> None:
    query = "{ items { __typename child { __typename size child { name colour } } } }"
    fast = answer(FastExecution, query)
    assert fast == answer(StoppableExecution, query)
    # a (size 1) -> a-child (size 2) -> a-child-child (size 3, BLUE); b has no child
    assert json.loads(fast)["data"]["items"] == [
        {"__typename": "Item", "child": {"__typename": "Item", "size": 2,
                                         "child": {"name": "a-child-child", "colour": "BLUE"}}},
        {"__typename": "Item", "child": None}]


@strawberry.type
class Odd:
    """Values at the edges of the specified scalars' output coercions."""

    count: int
    ratio: float
    label: str
    flag: bool
    maybe: int | None


@strawberry.type
class Box:
    @strawberry.field
    def odd(self) -> Odd:  # a planned object: its leaves are completed by the generated code
        return self.value  # type: ignore[attr-defined,no-any-return]

    value: strawberry.Private[Any]


def odd_answer(execution: type[Any], values: list[dict[str, Any]]) -> str:
    @strawberry.type
    class OddQuery:
        @strawberry.field
        def boxes(self) -> list[Box | None]:
            return [Box(value=Odd(**v)) for v in values]

    schema = strawberry.Schema(query=OddQuery, execution_context_class=execution)
    result = schema.execute_sync("{ boxes { odd { count ratio label flag maybe } } }")
    errors = [{"message": e.message, "path": e.path} for e in result.errors or []]
    return json.dumps({"data": result.data, "errors": errors})


def test_leaves_at_the_edges_of_the_scalars_are_graphql_cores() -> None:
    """Returned as read only where graphql-core's coercion returns the value unchanged."""
    edge = {"count": 2**31 - 1, "ratio": -0.0, "label": "é", "flag": False, "maybe": -(2**31)}
    coerced = {"count": True, "ratio": 3, "label": 7, "flag": 1, "maybe": None}  # bool->1, int->3.0, 7->"7", 1->True
    too_big = {"count": 2**31, "ratio": 1.5, "label": "x", "flag": True, "maybe": 0}  # Int error
    infinite = {"count": 1, "ratio": float("inf"), "label": "x", "flag": True, "maybe": 0}  # Float error
    values = [edge, coerced, too_big, infinite]
    fast = odd_answer(FastExecution, values)
    assert fast == odd_answer(StoppableExecution, values)
    got = json.loads(fast)
    assert got["data"]["boxes"][0] == {"odd": {"count": 2147483647, "ratio": -0.0, "label": "é", "flag": False,
                                               "maybe": -2147483648}}
    assert got["data"]["boxes"][1] == {"odd": {"count": 1, "ratio": 3.0, "label": "7", "flag": True, "maybe": None}}
    # the 2**31 count and the infinite ratio are errors: each nulls its (nullable) box
    assert got["data"]["boxes"][2:] == [None, None]
    assert [e["path"] for e in got["errors"]] == [["boxes", 2, "odd", "count"], ["boxes", 3, "odd", "ratio"]]


def test_each_field_node_is_planned_once_whatever_its_depth(monkeypatch: Any) -> None:
    """A selection that cannot be planned at its bottom (``contextName`` takes ``info``) is
    not planned again at every level above it as graphql-core executes down to it."""
    from workload_map.graphql import fastpath

    monkeypatch.setattr(fastpath, "_PLANS", {})
    calls: list[tuple[str, int]] = []
    real = fastpath._field_parts

    def counted(parent: Any, node: Any) -> Any:
        calls.append((parent.name, id(node)))
        return real(parent, node)

    monkeypatch.setattr(fastpath, "_field_parts", counted)
    query = "{ items { name child { size child { size child { name contextName } } } } }"
    schema = strawberry.Schema(query=Query, execution_context_class=FastExecution)
    first = schema.execute_sync(query, context_value={"who": "me"})
    assert first.errors is None
    # a -> a-child (size 2) -> a-child-child (size 3) whose child is None; b has none
    assert first.data == {"items": [
        {"name": "a", "child": {"size": 2, "child": {"size": 3, "child": None}}},
        {"name": "b", "child": None}]}
    # 9 field nodes (items, name, child, size, child, size, child, name, contextName): each planned
    # once (each level used to plan its whole subtree again: 27 plans)
    assert len(calls) == len(set(calls)) == 9
