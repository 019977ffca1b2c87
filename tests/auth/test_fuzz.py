"""Fuzzing, bounded in time: schemathesis over the REST API (``/openapi.json``) and the GraphQL
schema of the in-process app, and hypothesis-generated definitions (random structures and
mutated valid Kartas) through ``POST /api/v1/definitions`` and ``registerDefinition``.

Pass criteria: no 5xx, no crash, no hang (every call has a timeout), and the app still
answers a normal query afterwards. Example counts are small so the suite stays fast;
``WMAP_FUZZ_EXAMPLES`` raises them for a longer local run.
"""

from __future__ import annotations

import copy
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
import schemathesis
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error

from workload_map.app import create_app
from workload_map.config import HttpSettings, ResolverSettings, Settings
from workload_map.kube.snapshot import SnapshotReader
from tests.api.conftest import JOBSET

UNEXPECTED = "Unexpected error."
EXAMPLES = int(os.environ.get("WMAP_FUZZ_EXAMPLES", "30"))
CALL_TIMEOUT_S = 20
CATALOG_JOBSET = Path(__file__).parents[2] / "catalog" / "jobset-x-k8s-io-jobset-v1alpha2.yaml"
FUZZ_SETTINGS = settings(max_examples=EXAMPLES, deadline=None, phases=[Phase.explicit, Phase.generate],
                         suppress_health_check=list(HealthCheck), derandomize=True)


def _app() -> Any:
    state = Path(tempfile.mkdtemp(prefix="wmap-fuzz-"))
    # the registration trial's jobs get the resolver's budget: a non-terminating expression costs 1 s, not 2
    app = create_app(Settings(state_dir=state, http=HttpSettings(max_wait_s=1.0, request_timeout_s=10.0),
                              resolver=ResolverSettings(timeout_s=1.0)),
                     reader=SnapshotReader.from_paths(JOBSET))
    assert app.state.runtime.registrar is not None
    return app


APP = _app()
REST = schemathesis.openapi.from_asgi("/openapi.json", APP)
GRAPHQL = schemathesis.graphql.from_asgi("/graphql", APP)


@REST.parametrize()
@FUZZ_SETTINGS
def test_rest_inputs_never_cause_a_server_error(case: Any) -> None:
    case.call_and_validate(checks=[not_a_server_error], timeout=CALL_TIMEOUT_S)


@GRAPHQL.parametrize()
@FUZZ_SETTINGS
def test_graphql_inputs_never_cause_a_server_error(case: Any) -> None:
    """Expected failures (bad cursor, page size) are GraphQL errors by design, so the check is
    ours: no 5xx, and no error masked as unexpected (an exception our code did not expect)."""
    response = case.call(timeout=CALL_TIMEOUT_S)
    assert response.status_code < 500, response.text
    errors = response.json().get("errors") or []
    assert all(e.get("message") != UNEXPECTED for e in errors), errors


# ---- definitions ---------------------------------------------------------------------------

JQ = st.sampled_from([
    ".spec", ".metadata.name", ".status.conditions[]?", "[.spec.replicatedJobs[].name]", ".[", "..", "del(.a)",
    "def f: f; f", "[range(100000)]", "[limit(5000; repeat(1))]", "error(\"x\")", "input", "$__loc__", "env",
    "@sh", "tostring | tonumber", ".a as $x | $x", "if . then 1 else 2 end", "", " ", "\u0000", "a" * 3000,
])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False),
                    st.text(max_size=40), JQ)
JSON_VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=15), inner, max_size=5)), max_leaves=30)
KEYS = st.sampled_from(["apiVersion", "kind", "metadata", "spec", "structureDefinition", "rootComponent",
                        "childComponents", "name", "kind", "group", "version", "ownerRef", "instanceIdPath",
                        "statusDefinition", "statusMappings", "podTemplateSpecPath", "replicasPath",
                        "specDefinition", "podSelector", "expression", "expectedResult", "byExpression"])


def _valid() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(CATALOG_JOBSET.read_text())
    doc["metadata"] = {"name": "fuzzed"}
    return doc


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += _paths(item, (*prefix, index))
    return out


@st.composite
def mutated_kartas(draw: st.DrawFn) -> dict[str, Any]:
    """The catalog JobSet Karta with 1-4 edits: a node replaced, removed, or a key added."""
    doc = _valid()
    for _ in range(draw(st.integers(1, 4))):
        paths = [p for p in _paths(doc) if p]
        path = draw(st.sampled_from(paths))
        parent: Any = doc
        for step in path[:-1]:
            parent = parent[step]
        action = draw(st.sampled_from(["replace", "remove", "add"]))
        if action == "replace":
            parent[path[-1]] = draw(JSON_VALUES)
        elif action == "remove":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(KEYS)] = draw(JSON_VALUES)
    return doc


DOCUMENTS = st.one_of(JSON_VALUES, st.dictionaries(KEYS, JSON_VALUES, max_size=6), mutated_kartas())
REGISTER = "mutation($doc: String!, $dry: Boolean) { registerDefinition(definition: $doc, dryRun: $dry) { ok " \
           "problems { path message } } }"


@pytest.fixture(scope="module")
def client() -> Any:
    """A requests-style client on a fresh app (schemathesis's ASGI client: the app runs with
    its lifespan on a portal thread; ``timeout=`` bounds each call)."""
    from schemathesis.python.asgi import get_client

    with get_client(_app()) as asgi_client:
        yield asgi_client


def _body(doc: Any, as_yaml: bool) -> str:
    return yaml.safe_dump(doc) if as_yaml else json.dumps(doc)


@FUZZ_SETTINGS
@given(doc=DOCUMENTS, as_yaml=st.booleans(), dry_run=st.booleans())
def test_random_definitions_through_rest_are_answered_not_crashed(client: Any, doc: Any, as_yaml: bool,
                                                                 dry_run: bool) -> None:
    response = client.post(f"/api/v1/definitions?dryRun={str(dry_run).lower()}",
                           data=_body(doc, as_yaml).encode(), timeout=CALL_TIMEOUT_S,
                           headers={"Content-Type": "application/yaml" if as_yaml else "application/json"})
    assert response.status_code in (200, 201, 400, 409, 413, 422), (response.text, _body(doc, as_yaml)[:2000])
    assert response.json()["error" if response.status_code >= 400 else "definition"]


@FUZZ_SETTINGS
@given(doc=DOCUMENTS, as_yaml=st.booleans(), dry_run=st.booleans())
def test_random_definitions_through_graphql_are_answered_not_crashed(client: Any, doc: Any, as_yaml: bool,
                                                                    dry_run: bool) -> None:
    response = client.post("/graphql", json={"query": REGISTER, "variables": {
        "doc": _body(doc, as_yaml), "dry": dry_run}}, timeout=CALL_TIMEOUT_S)
    assert response.status_code == 200, response.text
    body = response.json()
    assert "errors" not in body, body
    result = body["data"]["registerDefinition"]
    assert result["ok"] or result["problems"]


def test_the_server_still_serves_after_the_fuzzing(client: Any) -> None:
    response = client.post("/graphql", json={"query": "{ workloads { totalCount } definitions { name } }"},
                           timeout=CALL_TIMEOUT_S)
    assert response.status_code == 200 and response.json()["data"]["workloads"]["totalCount"] == 1
    assert client.get("/readyz", timeout=CALL_TIMEOUT_S).status_code == 200


def test_the_valid_karta_is_accepted(client: Any) -> None:
    """The mutation baseline is itself valid (so mutations test rejection paths, not noise)."""
    doc = copy.deepcopy(_valid())
    response = client.post("/api/v1/definitions?dryRun=true", data=yaml.safe_dump(doc).encode(),
                           timeout=CALL_TIMEOUT_S, headers={"Content-Type": "application/yaml"})
    assert response.status_code == 200, response.text
