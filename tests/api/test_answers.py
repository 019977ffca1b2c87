"""GraphQL answers kept per view generation (``workload_map.api.answers``).

Figures worked out from ``tests/api/objects.jobset``: every pod asks ``gpus`` nvidia.com/gpu
and is bound to node-a unless told otherwise, so a JobSet of roles ``{"w": n}`` asks
``n * gpus`` by spec and has ``n * gpus`` allocated when its pods are bound.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from graphql import parse

from workload_map.api.answers import AnswerCache, charge, reads_views_only, request_key
from workload_map.app import create_app
from workload_map.config import Settings
from workload_map.graphql.cost import select_operation
from workload_map.kube.snapshot import SnapshotReader

from tests.api.objects import jobset

SUMMARY = "{ gpuSummary(groupBy: NAMESPACE) { key workloads gpu { requestedBySpec allocated } } }"


def _operation(text: str, name: str | None = None) -> object:
    return select_operation(parse(text), name)


@pytest.mark.parametrize(("text", "name", "kept"), [
    (SUMMARY, None, True),
    ("query P($a: String) { workloads(first: 2, after: $a) { totalCount nodes { name gpu { allocated } } } }", None,
     True),
    ('{ workload(namespace: "ml", group: "jobset.x-k8s.io", kind: "JobSet", name: "a") { name } __typename }', None,
     True),
    ("{ cluster { lastSuccess } }", None, False),  # a clock: not a function of the views
    ("{ gpuSummary(groupBy: KIND) { key } definitions { name } }", None, False),  # one root field outside the views
    ('{ podWorkload(namespace: "ml", name: "p") { component } }', None, False),  # reads the pod cache
    ("{ ...F } fragment F on Query { gpuSummary(groupBy: KIND) { key } }", None, False),  # root fragment
    ("mutation { __typename }", None, False),
    ("query A { gpuSummary(groupBy: KIND) { key } } query B { cluster { synced } }", "A", True),
    ("query A { gpuSummary(groupBy: KIND) { key } } query B { cluster { synced } }", "B", False),
])
def test_which_operations_are_kept(text: str, name: str | None, kept: bool) -> None:
    assert reads_views_only(_operation(text, name)) is kept  # type: ignore[arg-type]


def test_request_key_is_canonical_in_its_variables_and_refuses_what_is_not_json() -> None:
    assert request_key("q", None, {"b": 1, "a": [2]}) == request_key("q", None, {"a": [2], "b": 1}) == \
        ("q", None, '{"a":[2],"b":1}')
    assert request_key("q", None, None) == request_key("q", None, {}) == ("q", None, "{}")
    assert request_key("q", "Op", {}) != request_key("q", None, {})
    assert request_key(None, None, {}) is None
    assert request_key("q", None, {"x": float("nan")}) is None
    assert request_key("q", None, {"x": object()}) is None


def test_a_kept_answer_holds_only_for_its_stamp_and_the_bytes_bound_drops_the_oldest() -> None:
    keys = [(f"q{i}", None, "{}") for i in range(4)]
    each = charge(keys[0], b"x" * 1000)
    assert 1000 + 2 + 2 + 200 <= each <= 1000 + 200 + 3 * 64  # body, key texts, the objects around them
    cache = AnswerCache(max_bytes=3 * each, max_entry_bytes=2 * each)  # room for three
    cache.put(keys[0], ("gen", 1), b"x" * 1000)
    assert cache.get(keys[0], ("gen", 1)) == b"x" * 1000
    assert cache.get(keys[0], ("gen", 2)) is None  # the views changed since
    assert (cache.hits, cache.misses) == (1, 1)
    cache.put(keys[0], ("gen", 2), b"y" * 1000)  # replaces the old answer
    assert cache.get(keys[0], ("gen", 2)) == b"y" * 1000 and len(cache) == 1
    for key in keys[1:]:
        cache.put(key, ("gen", 2), b"z" * 1000)
    assert len(cache) == 3 and cache.get(keys[0], ("gen", 2)) is None  # least recently used went first
    cache.put(("big", None, "{}"), ("gen", 2), b"b" * (2 * each))  # over max_entry_bytes: not kept
    assert cache.get(("big", None, "{}"), ("gen", 2)) is None


def test_a_non_ascii_document_is_charged_the_memory_it_holds() -> None:
    document = "{ gpuSummary(groupBy: KIND) { key } }\n#" + "\U0001F600" * 100_000  # a comment: no tokens
    assert charge((document, None, "{}"), b"{}") >= 4 * 100_000  # 4 bytes a character in memory
    cache = AnswerCache(max_bytes=1_000_000, max_entry_bytes=1_000_000)
    for i in range(5):
        cache.put((document + str(i), None, "{}"), ("gen", 1), b"{}")
    assert len(cache) == 2  # 2 x 400 KB fit in 1 MB, not 5 (each was charged 100 KB as characters)
    huge = AnswerCache(max_bytes=100_000, max_entry_bytes=10**9)
    huge.put((document, None, "{}"), ("gen", 1), b"{}")  # larger than the whole cache: not kept, no error
    assert len(huge) == 0


async def _post(client: httpx.AsyncClient, query: str) -> httpx.Response:
    response = await client.post("/graphql", json={"query": query})
    assert response.status_code == 200, response.text
    return response


async def test_a_repeated_summary_is_the_kept_answer_until_a_view_changes(tmp_path: Path) -> None:
    reader = SnapshotReader(jobset("a", "team-1", {"w": 2}, gpus=1) + jobset("b", "team-2", {"w": 1}, gpus=8))
    app = create_app(Settings(state_dir=tmp_path / "s"), reader=reader)
    runtime = app.state.runtime
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        first = await _post(client, SUMMARY)
        second = await _post(client, SUMMARY)
        assert second.content == first.content and second.headers["content-type"] == "application/json"
        assert runtime.answers.hits == 1
        assert [(b["key"], b["workloads"], b["gpu"]["requestedBySpec"], b["gpu"]["allocated"])
                for b in second.json()["data"]["gpuSummary"]] == [("team-1", 1, 2, 2), ("team-2", 1, 8, 8)]
        # a third JobSet in team-1, 3 pods of 2 GPUs, unscheduled: the views change, the kept answer is not used
        for obj in jobset("c", "team-1", {"w": 3}, gpus=2, node=None):
            reader.add(obj)
        assert await runtime.service.settled(30)
        third = await _post(client, SUMMARY)
        assert runtime.answers.hits == 1
        assert [(b["key"], b["workloads"], b["gpu"]["requestedBySpec"], b["gpu"]["allocated"])
                for b in third.json()["data"]["gpuSummary"]] == [("team-1", 2, 2 + 6, 2), ("team-2", 1, 8, 8)]
        assert (await _post(client, SUMMARY)).content == third.content and runtime.answers.hits == 2


async def test_answers_with_errors_or_outside_the_views_are_not_kept(tmp_path: Path) -> None:
    reader = SnapshotReader(jobset("a", "team-1", {"w": 2}, gpus=1))
    app = create_app(Settings(state_dir=tmp_path / "s"), reader=reader)
    answers = app.state.runtime.answers
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        for _ in range(2):
            assert (await _post(client, "{ cluster { synced stale } }")).json()["data"]["cluster"] == {
                "synced": True, "stale": False}
            refused = (await _post(client, "{ workloads(first: 0) { totalCount } }")).json()
            assert refused["data"] is None and refused["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
        assert answers.hits == 0 and len(answers) == 0
        query = '{ workload(namespace: "team-1", group: "jobset.x-k8s.io", kind: "JobSet", name: "a") { name } }'
        assert (await _post(client, query)).json() == {"data": {"workload": {"name": "a"}}}
        assert (await _post(client, query)).json() == {"data": {"workload": {"name": "a"}}}
        assert answers.hits == 1 and len(answers) == 1


async def test_a_caller_checked_by_the_cluster_gets_no_kept_answer(tmp_path: Path) -> None:
    from workload_map.auth.access import KubernetesAccess
    from workload_map.config import AuthSettings
    from tests.auth.support import RULES, USERS, FakeReviewer, PluralReader, bearer, objects

    settings = Settings(state_dir=tmp_path / "s", auth=AuthSettings(mode="kubernetes"))
    app = create_app(settings, reader=PluralReader(objects()), access=KubernetesAccess(FakeReviewer(USERS, RULES)))
    answers = app.state.runtime.answers
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        for _ in range(2):
            response = await client.post("/graphql", json={"query": "{ workloads { totalCount } }"},
                                         headers=bearer("root-token"))
            assert response.status_code == 200 and response.json()["data"]["workloads"]["totalCount"] == 3
    assert answers.hits == 0 and len(answers) == 0


async def test_once_settled_the_views_are_kept_out_of_full_collections(tmp_path: Path) -> None:
    import gc

    from workload_map.app import freeze_when_settled

    reader = SnapshotReader(jobset("a", "team-1", {"w": 2}, gpus=1))
    app = create_app(Settings(state_dir=tmp_path / "s"), reader=reader)
    async with app.router.lifespan_context(app):
        service = app.state.runtime.service
        (view,) = service.workloads()
        assert gc.is_tracked(view) and any(o is view for o in gc.get_objects(generation=2) + gc.get_objects())
        before = gc.get_freeze_count()
        try:
            await freeze_when_settled(service)
            assert gc.get_freeze_count() > before
            assert not any(o is view for o in gc.get_objects())  # frozen: no generation lists it any more
        finally:
            gc.unfreeze()  # the test process's collector as it was


@pytest.mark.parametrize(("name", "kind"), [([], "list"), (5, "int"), ({"a": 1}, "dict"), (True, "bool")])
async def test_an_operation_name_that_is_not_a_string_is_a_400(tmp_path: Path, name: object, kind: str) -> None:
    # a list reached the cost check's cache key and was an INTERNAL error (found by a new-user pass)
    app = create_app(Settings(state_dir=tmp_path / "s"), reader=SnapshotReader(jobset("a", "team-1", {"w": 1})))
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        response = await client.post("/graphql", json={"query": SUMMARY, "operationName": name})
    assert response.status_code == 400
    assert response.json()["errors"][0]["message"] == f"operationName must be a string or null, got {kind}"
    assert app.state.runtime.answers.hits == 0 and len(app.state.runtime.answers) == 0


async def test_an_answer_says_the_freshness_its_stamp_was_taken_at(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One read of the freshness per kept-eligible request: the stamp and ``extensions.stale`` share it.

    The informers here turn fresh right after the first read: the first answer still says
    stale (what its stamp says), and the next request, fresh, is a miss without the extension.
    """
    from workload_map.kube.reader import FRESH, Freshness

    reader = SnapshotReader(jobset("a", "team-1", {"w": 2}, gpus=1))
    app = create_app(Settings(state_dir=tmp_path / "s"), reader=reader)
    runtime = app.state.runtime
    stale = Freshness(synced=True, stale=True, since=1_796_000_000.0, error="connection refused",
                      stale_kinds=("core/v1/Pod",))
    reads: list[Freshness] = []

    def read() -> Freshness:
        reads.append(stale if not reads else FRESH)
        return reads[-1]

    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        monkeypatch.setattr(runtime.service, "freshness", read)
        first = (await _post(client, SUMMARY)).json()
        assert len(reads) == 1  # the stamp's read, nothing after it
        assert first["extensions"]["stale"] == {"since": "2026-11-30T00:53:20Z", "error": "connection refused",
                                                "staleKinds": ["core/v1/Pod"]}
        assert first["data"]["gpuSummary"][0]["gpu"]["requestedBySpec"] == 2  # 2 pods of 1 GPU
        second = (await _post(client, SUMMARY)).json()
        assert len(reads) == 2 and "extensions" not in second and second["data"] == first["data"]
        assert runtime.answers.hits == 0  # the stamp changed (stale -> fresh): a miss
        assert (await _post(client, SUMMARY)).json() == second and runtime.answers.hits == 1
