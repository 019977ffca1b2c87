"""GraphQL errors in one shape (issue 26 item 5): every error's ``extensions.code`` is from one set.

Each code of ``workload_map.graphql.errors.CODES`` is provoked through real HTTP requests to
the app served by uvicorn on 127.0.0.1 (``tests.api.live.serving``): the JobSet fixture app
for the document, input, not-found, conflict and internal errors; the ``--auth kubernetes``
app with the fake reviewer of ``tests.auth.support`` for credentials, permissions, an
unavailable review and the request budget. docs/api.md must list exactly the set.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from workload_map.api.errors import GRAPHQL_CODES
from workload_map.app import create_app
from workload_map.auth.access import KubernetesAccess
from workload_map.config import AuthSettings, HttpSettings, Settings
from workload_map.errors import ServerError
from workload_map.graphql.errors import CODES, DOMAIN_CODES, REFUSALS
from workload_map.kube.reviews import ReviewedUser, ReviewUnavailable
from workload_map.kube.snapshot import SnapshotReader
from tests.api.conftest import JOBSET
from tests.api.live import serving, wait_until
from tests.auth.support import RULES, USERS, FakeReviewer, PluralReader, bearer, objects

REPO = Path(__file__).resolve().parents[2]
TRAIN = 'namespace: "ml", group: "jobset.x-k8s.io", kind: "JobSet", name: "train"'
NESTED = "{ workloads { nodes { components { " + "children { " * 14 + "name" + " }" * 14 + " } } } }"


async def post(client: httpx.AsyncClient, query: str, headers: dict[str, str] | None = None,
               **variables: Any) -> tuple[int, list[dict[str, Any]]]:
    """(status, errors) of one POST /graphql."""
    response = await client.post("/graphql", json={"query": query, "variables": variables}, headers=headers)
    return response.status_code, response.json().get("errors") or []


def codes(errors: list[dict[str, Any]]) -> list[str]:
    """The ``extensions.code`` of every error (KeyError when one lacks it)."""
    return [e["extensions"]["code"] for e in errors]


@pytest.fixture(scope="module")
async def plain(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the JobSet fixture app (1 JobSet ml/train at resourceVersion 100) over HTTP."""
    app = create_app(Settings(state_dir=tmp_path_factory.mktemp("errors") / "state"),
                     reader=SnapshotReader.from_paths(JOBSET))
    async with serving(app) as address, httpx.AsyncClient(base_url=f"http://{address}", timeout=30) as client:
        for _ in range(300):  # bounded: until the fixture is resolved
            if (await client.get("/readyz")).status_code == 200:
                break
            await asyncio.sleep(0.1)
        client.app = app  # type: ignore[attr-defined]
        yield client


async def test_document_errors(plain: httpx.AsyncClient) -> None:
    assert codes((await post(plain, "{ workloads {"))[1]) == ["GRAPHQL_PARSE_FAILED"]
    assert codes((await post(plain, "{ nope }"))[1]) == ["GRAPHQL_VALIDATION_FAILED"]
    assert codes((await post(plain, "{ gpuSummary(groupBy: NOPE) { key } }"))[1]) == ["GRAPHQL_VALIDATION_FAILED"]
    # group is no String, kind and name are missing: three findings, one code
    assert codes((await post(plain, "{ workload(group: 1) { name } }"))[1]) == ["GRAPHQL_VALIDATION_FAILED"] * 3


async def test_query_refusals(plain: httpx.AsyncClient) -> None:
    tokens = "{ " + " ".join("cluster { name }" for _ in range(1700)) + " }"  # 4 tokens each: 6,800 > 5,000
    aliases = "{ " + " ".join(f"a{i}: cluster {{ name }}" for i in range(51)) + " }"  # 51 > 50
    repeated = "{ " + " ".join("cluster { name }" for _ in range(300)) + " }"
    cycle = "query { ...A } fragment A on Query { ...B } fragment B on Query { ...A }"
    # 300 pages of 500 workloads, each with its 14 fields: far over the 100,000 limit
    expensive = "{ " + " ".join(f"p{i}: workloads(first: 500) {{ nodes {{ name namespace kind phase }} }}"
                                for i in range(40)) + " }"
    asked = {"TOO_MANY_TOKENS": tokens, "QUERY_TOO_DEEP": NESTED, "TOO_MANY_ALIASES": aliases,
             "FIELD_REPEATED": repeated, "FRAGMENT_CYCLE": cycle, "QUERY_TOO_EXPENSIVE": expensive,
             "OPERATION_NAME_REQUIRED": "query A { cluster { name } } query B { cluster { name } }"}
    got = {code: codes((await post(plain, query))[1]) for code, query in asked.items()}
    assert got == {code: [code] for code in asked}


async def test_bad_user_input(plain: httpx.AsyncClient) -> None:
    status, errors = await post(plain, '{ workloads(after: "zzz") { totalCount } }')
    assert status == 200 and errors[0]["message"] == "invalid cursor 'zzz'"
    assert errors[0]["extensions"] == {"code": "BAD_USER_INPUT", "error": "bad_request"}
    _, errors = await post(plain, "query($n: Int) { workloads(first: $n) { totalCount } }", n="x")
    assert codes(errors) == ["BAD_USER_INPUT"]  # a variable value, not the document
    _, errors = await post(plain, f'mutation {{ updatePodTemplate({TRAIN}, change: "[") {{ changed }} }}')
    assert errors[0]["extensions"] == {"code": "BAD_USER_INPUT", "error": "bad_request"}


async def test_not_found_and_conflict(plain: httpx.AsyncClient) -> None:
    missing = TRAIN.replace('"train"', '"nope"')
    _, errors = await post(plain, f"mutation {{ suspendWorkload({missing}) {{ changed }} }}")
    assert errors[0]["extensions"] == {"code": "NOT_FOUND", "error": "workload_not_found"}
    # the fixture's JobSet is at resourceVersion 100: a write made against 1 lost a race
    _, errors = await post(plain, f'mutation {{ suspendWorkload({TRAIN}, resourceVersion: "1") {{ changed }} }}')
    assert errors[0]["extensions"] == {"code": "CONFLICT", "error": "conflict"}
    assert "is at 100" in errors[0]["message"]


async def test_transport_errors_carry_bad_request(plain: httpx.AsyncClient) -> None:
    response = await plain.get("/graphql", params={"query": 'mutation { unregisterDefinition(name: "x") { ok } }'})
    assert response.status_code == 400
    assert response.json()["errors"][0]["extensions"] == {"code": "BAD_REQUEST", "error": "bad_request"}
    response = await plain.post("/graphql", content=b"{", headers={"content-type": "application/json"})
    assert response.status_code == 400 and codes(response.json()["errors"]) == ["BAD_REQUEST"]


async def test_subscription_errors_over_sse(plain: httpx.AsyncClient) -> None:
    """A stream's errors pass the same hook (SSE: one ``next`` event with the errors, then ``complete``)."""
    asked = {"GRAPHQL_VALIDATION_FAILED": "subscription { workloadPhaseChanged(namespace: 1) { phase } }",
             "GRAPHQL_PARSE_FAILED": "subscription {"}
    got = {}
    for code, query in asked.items():
        async with plain.stream("POST", "/graphql", json={"query": query},
                                headers={"accept": "text/event-stream"}) as response:
            text = ""
            async for chunk in response.aiter_text():
                text += chunk
                if "event: complete" in text:
                    break
        event = next(line for line in text.splitlines() if line.startswith("data: {"))
        got[code] = codes(json.loads(event.removeprefix("data: "))["errors"])
    assert got == {code: [code] for code in asked}


async def test_unexpected_errors_are_internal_and_masked(plain: httpx.AsyncClient,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("secret internals")

    monkeypatch.setattr(plain.app.state.runtime.service, "workloads", boom)  # type: ignore[attr-defined]
    _, errors = await post(plain, "{ workloads { totalCount } }")
    assert [(e["message"], e["extensions"]) for e in errors] == [("Unexpected error.", {"code": "INTERNAL"})]


async def test_caches_not_synced_are_unavailable(tmp_path: Path) -> None:
    """Before the caches synced (the lifespan is not run here) a workload read is ``UNAVAILABLE``."""
    app = create_app(Settings(state_dir=tmp_path / "state"), reader=SnapshotReader.from_paths(JOBSET))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        response = await client.post("/graphql", json={"query": "{ workloads { totalCount } }"})
    assert response.status_code == 200
    assert [e["extensions"] for e in response.json()["errors"]] == [{"code": "UNAVAILABLE", "error": "not_ready"}]


class FlakyReviewer(FakeReviewer):
    """The fake reviewer whose SubjectAccessReviews fail while ``down`` (the API server is away)."""

    down = False

    async def review_access(self, user: ReviewedUser, attributes: Any) -> bool:
        if self.down:
            raise ReviewUnavailable("SubjectAccessReview failed: connection refused")
        return await super().review_access(user, attributes)


async def test_credentials_permissions_availability_and_time(tmp_path: Path) -> None:
    reviewer = FlakyReviewer(USERS, RULES)
    settings = Settings(state_dir=tmp_path / "state", auth=AuthSettings(mode="kubernetes"),
                        http=HttpSettings(request_timeout_s=0.5))
    app = create_app(settings, reader=PluralReader(objects()), access=KubernetesAccess(reviewer))
    register = 'mutation { unregisterDefinition(name: "jobset-x-k8s-io-jobset-v1alpha2") { ok } }'
    async with serving(app) as address, httpx.AsyncClient(base_url=f"http://{address}", timeout=30) as client:
        status, errors = await post(client, "{ cluster { name } }")
        assert status == 401 and [e["extensions"] for e in errors] == [{"code": "UNAUTHENTICATED",
                                                                       "error": "unauthorized"}]
        # bob may list JobSets in a and b but not delete kartas.run.ai
        status, errors = await post(client, register, headers=bearer("bob-token"))
        assert status == 200 and [e["extensions"] for e in errors] == [{"code": "FORBIDDEN", "error": "forbidden"}]
        reviewer.down = True  # a new decision (create, not delete): the review is attempted and fails
        _, errors = await post(client, 'mutation { registerCatalogType(name: "jobset") { ok } }',
                               headers=bearer("bob-token"))
        assert [e["extensions"] for e in errors] == [{"code": "UNAVAILABLE", "error": "auth_unavailable"}]
        reviewer.down = False
        reviewer.delay = 2.0  # bob's list review takes 2 s; the request budget is 0.5 s
        status, errors = await post(client, "{ workloads { totalCount } }", headers=bearer("bob-token"))
        assert status == 504 and [e["extensions"] for e in errors] == [{"code": "TIMEOUT",
                                                                       "error": "deadline_exceeded"}]
        reviewer.delay = 0.0
        await wait_until(lambda: reviewer.in_flight == 0, 60)


def _server_error_classes() -> set[type[ServerError]]:
    import workload_map.cli.kubectl  # noqa: F401  (defines ClusterUnreachable)

    found, todo = set(), [ServerError]
    while todo:
        cls = todo.pop()
        found.add(cls)
        todo += cls.__subclasses__()
    return found


def test_every_domain_error_has_its_code() -> None:
    unmapped = sorted(c.__name__ for c in _server_error_classes() if c.code not in DOMAIN_CODES)
    assert unmapped == []
    assert set(DOMAIN_CODES.values()) <= set(CODES)
    assert set(GRAPHQL_CODES.values()) <= set(CODES)
    assert set(REFUSALS) <= set(CODES)


def test_docs_list_exactly_the_set() -> None:
    text = (REPO / "docs" / "api.md").read_text()
    section = text.split("### Errors", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\| `([A-Z_]+)` \|", section, flags=re.M)
    assert sorted(listed) == sorted(CODES)
