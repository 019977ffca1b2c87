"""GraphQL cost before validation: fragment-expanded field counts with pages multiplied,
fragment spread and repeat limits, cycles and operationName, over the real app."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from graphql import parse

from workload_map.graphql.cost import DEFAULT_MAX_COST, CostLimits, QueryRefused, operation_cost
from workload_map.graphql.schema import schema
from workload_map.app import create_app
from workload_map.cli.live import serve_settings
from workload_map.cli.main import parser
from workload_map.config import DEFAULT_GRAPHQL_MAX_COST, HttpSettings, Settings
from workload_map.errors import InvalidRequest
from workload_map.kube.snapshot import SnapshotReader

PORTAL = (Path(__file__).parent.parent / "abuse" / "portal_query.graphql").read_text(encoding="utf-8")
# cost of PORTAL, by hand. One workload node:
#   13 scalars (id .. createdAt) + replicas 1+3 + gpu 1+3 + resources 1+3 + conditions 1+4 = 30
#   roles 1 + [5 scalars + replicas 1+5 + gpu 1+3 + instances 1+(1 + replicas 1+3 + pods 1+5)
#              + pods 1+(6 + resources 1+3)] = 1 + 5 + 6 + 4 + 12 + 11 = 39
#   errors 1+3 = 4                                       -> 30 + 39 + 4 = 73 per node
#   workloads = 1 + 500 * (totalCount 1 + pageInfo 1+2 + nodes 1+73) = 1 + 500 * 78 = 39,001
PORTAL_COST = 39_001


def tree_bomb(levels: int) -> str:
    """C0 selects name; each C(i) selects children twice (aliases a, b) with C(i-1): no
    response name repeats, so only the cost stops it. C(i) = 2 * (1 + C(i-1)), C(0) = 1,
    hence C(i) = 3 * 2^i - 2."""
    fragments = ["fragment C0 on Component { name }"]
    fragments += [f"fragment C{i} on Component {{ a: children {{ ...C{i - 1} }} b: children {{ ...C{i - 1} }} }}"
                  for i in range(1, levels + 1)]
    return ('{ workload(namespace: "ml", group: "jobset.x-k8s.io", kind: "JobSet", name: "train") '
            f"{{ components {{ ...C{levels} }} }} }} " + " ".join(fragments))


def bomb(levels: int) -> str:
    """F0 selects definitions{name}; each F(i) spreads F(i-1) twice."""
    fragments = ["fragment F0 on Query { definitions { name } }"]
    fragments += [f"fragment F{i} on Query {{ ...F{i - 1} ...F{i - 1} }}" for i in range(1, levels + 1)]
    return f"query {{ ...F{levels} }} " + " ".join(fragments)


async def post(client: httpx.AsyncClient, query: str, **extra: Any) -> dict[str, Any]:
    response = await client.post("/graphql", json={"query": query, **extra})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def refusal(body: dict[str, Any]) -> tuple[str, str]:
    assert body.get("data") is None and len(body["errors"]) == 1, body
    error = body["errors"][0]
    return error["extensions"]["code"], error["message"]


def test_default_budget_is_one_figure() -> None:
    assert DEFAULT_MAX_COST == DEFAULT_GRAPHQL_MAX_COST == HttpSettings().graphql_max_cost


def test_portal_query_cost_is_worked_out_by_hand() -> None:
    assert operation_cost(schema._schema, parse(PORTAL)) == PORTAL_COST


def test_fragment_bomb_is_priced_without_expanding_it() -> None:
    # 30 levels: 61 spreads (under the 64 limit); F0 costs 2 (definitions + name), each
    # level doubles: F30 = 2 * 2^30 = 2^31
    limits = CostLimits(max_cost=10**12, max_same_field=10**12)
    assert operation_cost(schema._schema, parse(bomb(30)), limits=limits) == 2**31
    # workload 1 + components 1 + C30 (3 * 2^30 - 2)
    assert operation_cost(schema._schema, parse(tree_bomb(30)), limits=limits) == 3 * 2**30


async def test_fragment_bombs_are_refused_naming_the_figures(client: httpx.AsyncClient) -> None:
    code, message = refusal(await post(client, bomb(40)))
    # 1 spread in the operation + 2 in each of F1..F40 = 81
    assert code == "TOO_MANY_FRAGMENT_SPREADS"
    assert message == "the document holds 81 fragment spreads; the limit is 64"
    code, message = refusal(await post(client, bomb(30)))
    # 2^5 = 32 copies of 'definitions' meet in F5's selection set
    assert (code, message) == ("FIELD_REPEATED", "'definitions' is selected 32 times in one selection set; the "
                                                 "limit is 20")
    code, message = refusal(await post(client, tree_bomb(30)))
    assert code == "QUERY_TOO_EXPENSIVE"
    # 3 * 2^30 = 3,221,225,472
    assert message.startswith("the query would resolve 3,221,225,472 fields (pages expanded); the limit is 100,000")


async def test_portal_query_passes_and_three_pages_do_not(client: httpx.AsyncClient) -> None:
    body = await post(client, PORTAL)
    assert "errors" not in body, body
    assert body["data"]["workloads"]["totalCount"] == 1  # the fixture holds one JobSet
    roles = body["data"]["workloads"]["nodes"][0]["roles"]
    assert sum(len(r["pods"]) for r in roles) == 3
    inner = PORTAL[PORTAL.index("  workloads"):PORTAL.rindex("}")]
    triple = "query { " + " ".join(f"p{i}: {inner.strip()}" for i in range(3)) + " }"
    triple = triple.replace("(first: 500, after: $after)", "(first: 500)")
    code, message = refusal(await post(client, triple))
    # three aliases of the same page: 3 * 39,001
    assert code == "QUERY_TOO_EXPENSIVE" and "117,003 fields" in message


async def test_page_size_from_variables_and_defaults(settings: Settings, reader: SnapshotReader) -> None:
    settings.http.graphql_max_cost = 1_000
    app = create_app(settings, reader=reader)
    query = "query Q($n: Int = 200) { workloads(first: $n) { nodes { name } } }"
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        # variable given: 1 + 500 * (nodes 1 + name 1) = 1,001 > 1,000
        code, message = refusal(await post(client, query, variables={"n": 500}))
        assert code == "QUERY_TOO_EXPENSIVE" and "1,001 fields" in message and "limit is 1,000" in message
        # a Float 500.0 for the Int: graphql-core coerces it to 500 and runs 500, so it is priced 1,001
        code, message = refusal(await post(client, query, variables={"n": 500.0}))
        assert code == "QUERY_TOO_EXPENSIVE" and "1,001 fields" in message
        # the variable's default: 1 + 200 * 2 = 401; the argument's default (100): 201
        assert "errors" not in await post(client, query)
        assert "errors" not in await post(client, "{ workloads { nodes { name } } }")


def test_variables_are_priced_as_execution_coerces_them() -> None:
    document = parse("query Q($n: Int = 1, $m: Int) { a: workloads(first: $n) { totalCount } "
                     "b: workloads(first: $m) { totalCount } }")
    # a: 1 + n * 1; b: 1 + m * 1 (no m: the argument's default, 100)
    assert operation_cost(schema._schema, document, variables={"n": 500.0}) == 501 + 101
    assert operation_cost(schema._schema, document, variables={"n": 500.0, "m": 250}) == 501 + 251
    # 500.5 does not coerce (execution refuses the operation): priced at the default 1
    assert operation_cost(schema._schema, document, variables={"n": 500.5}) == 2 + 101
    # the same document object again (as the parser cache hands it): the same prices
    assert operation_cost(schema._schema, document, variables={"n": 500.0}) == 501 + 101
    assert operation_cost(schema._schema, document, variables={"n": 500.5}) == 2 + 101


async def test_cycles_repeats_and_operation_names(client: httpx.AsyncClient) -> None:
    cycle = "{ ...A } fragment A on Query { definitions { name } ...B } fragment B on Query { ...A }"
    assert refusal(await post(client, cycle)) == ("FRAGMENT_CYCLE", "fragment spreads form a cycle: A -> B -> A")
    repeated = "{ " + " ".join("definitions { name }" for _ in range(21)) + " }"
    assert refusal(await post(client, repeated)) == (
        "FIELD_REPEATED", "'definitions' is selected 21 times in one selection set; the limit is 20")
    hidden = "{ ...A ...A ...A } fragment A on Query { " + "definitions { name } " * 7 + "}"
    # 3 spreads of 7 each collect 21 'definitions' fields in the operation's selection set
    assert refusal(await post(client, hidden))[0] == "FIELD_REPEATED"
    two = "query A { definitions { name } } query B { skippedDefinitions { name } }"
    assert refusal(await post(client, two)) == (
        "OPERATION_NAME_REQUIRED", "the document holds 2 operations: give operationName to choose the one to run")
    chosen = await post(client, two, operationName="B")
    assert chosen == {"data": {"skippedDefinitions": []}}


def test_budget_flag_and_environment() -> None:
    args = parser().parse_args(["serve", "--graphql-max-cost", "5000"])
    assert serve_settings(args, {"WMAP_GRAPHQL_MAX_COST": "7000"}).http.graphql_max_cost == 5000  # flag wins
    args = parser().parse_args(["serve"])
    assert serve_settings(args, {"WMAP_GRAPHQL_MAX_COST": "7000"}).http.graphql_max_cost == 7000
    assert serve_settings(args, {}).http.graphql_max_cost == 100_000
    with pytest.raises(InvalidRequest, match="WMAP_GRAPHQL_MAX_COST='lots' is not valid"):
        serve_settings(args, {"WMAP_GRAPHQL_MAX_COST": "lots"})


def test_a_priced_document_is_refused_again_with_the_same_figures() -> None:
    document = parse("query Q($after: String) { workloads(first: 100, after: $after) { nodes { name } } }")
    limits = CostLimits(max_cost=150)
    for after in (None, "x", "y"):  # no page size from a variable: one price for every cursor
        with pytest.raises(QueryRefused) as refused:
            operation_cost(schema._schema, document, variables={"after": after}, limits=limits)
        # 1 + 100 * (nodes 1 + name 1) = 201 > 150
        assert refused.value.extensions == {"code": "QUERY_TOO_EXPENSIVE", "cost": 201, "limit": 150}
    assert operation_cost(schema._schema, document, variables={"after": "z"}) == 201
