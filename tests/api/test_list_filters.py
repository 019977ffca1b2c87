"""REST workload list filters (issue 29 item 7): repeated = any of, unknown parameters
refused, ``kind`` as the CLI takes it, ``labelSelector`` and ``namespace`` on the
cluster-wide list."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from workload_map.app import create_app
from workload_map.config import Settings
from workload_map.kube.snapshot import SnapshotReader


def cronjob(name: str, namespace: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": name, "namespace": namespace, "uid": f"cj-{namespace}-{name}", "resourceVersion": "1",
                         "labels": labels},
            "spec": {"schedule": "* * * * *", "suspend": name == "paused",
                     "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}}}}


def pod(name: str, namespace: str, phase: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "uid": f"pod-{namespace}-{name}", "resourceVersion": "1",
                         "labels": {"app": name}},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
            "status": {"phase": phase, "conditions": [{"type": "Ready", "status": str(phase == "Running")}]}}


# 3 CronJobs (team-a: nightly {tier: batch}, paused {tier: batch}; team-b: hourly {tier: web})
# and 2 bare Pods (team-a/runner Running, team-b/done Succeeded): 5 top-level workloads
OBJECTS = [cronjob("nightly", "team-a", {"tier": "batch"}), cronjob("paused", "team-a", {"tier": "batch"}),
           cronjob("hourly", "team-b", {"tier": "web"}), pod("runner", "team-a", "Running"),
           pod("done", "team-b", "Succeeded")]


@pytest.fixture
async def client(tmp_path) -> AsyncIterator[httpx.AsyncClient]:  # type: ignore[no-untyped-def]
    app = create_app(Settings(state_dir=tmp_path / "state"), reader=SnapshotReader(OBJECTS))
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://test") as c:
        yield c


async def names(client: httpx.AsyncClient, path: str = "/api/v1/workloads", **params: Any) -> list[str]:
    response = await client.get(path, params=params)
    assert response.status_code == 200, response.text
    return [f"{i['namespace']}/{i['name']}" for i in response.json()["items"]]


async def test_every_workload_without_filters(client: httpx.AsyncClient) -> None:
    # sorted by namespace, kind, name
    assert await names(client) == ["team-a/nightly", "team-a/paused", "team-a/runner", "team-b/hourly",
                                   "team-b/done"]


@pytest.mark.parametrize("kind", ["CronJob", "cronjob", "cronjobs", "CronJob.batch", "cj"])
async def test_kind_accepts_what_the_cli_accepts(client: httpx.AsyncClient, kind: str) -> None:
    assert await names(client, kind=kind) == ["team-a/nightly", "team-a/paused", "team-b/hourly"]


async def test_repeated_and_comma_separated_values_mean_any_of(client: httpx.AsyncClient) -> None:
    # the bare pods: runner Running (Ready), done Completed (Succeeded)
    assert await names(client, phase=["Running", "Completed"]) == ["team-a/runner", "team-b/done"]
    assert await names(client, phase="Running,Completed") == ["team-a/runner", "team-b/done"]
    assert await names(client, kind=["Pod", "CronJob.batch"], namespace="team-b") == ["team-b/hourly", "team-b/done"]
    assert await names(client, namespace=["team-a", "team-b"], kind="Pod") == ["team-a/runner", "team-b/done"]


async def test_label_selector_on_the_cluster_wide_list(client: httpx.AsyncClient) -> None:
    assert await names(client, labelSelector="tier=batch") == ["team-a/nightly", "team-a/paused"]
    assert await names(client, labelSelector="tier in (web),tier!=batch") == ["team-b/hourly"]
    assert await names(client, labelSelector="!tier", kind="Pod") == ["team-a/runner", "team-b/done"]
    assert await names(client, "/api/v1/namespaces/team-a/workloads", labelSelector="app") == ["team-a/runner"]


@pytest.mark.parametrize(("path", "params", "message"), [
    ("/api/v1/workloads", {"phse": "Running"}, "unknown query parameter 'phse'; this endpoint accepts: cluster, "
                                               "contains, continue, definition, group, kind, labelSelector, limit, "
                                               "namespace, node, phase, view"),
    ("/api/v1/namespaces/team-a/workloads", {"namespace": "team-b"}, "unknown query parameter 'namespace'"),
    ("/api/v1/definitions", {"kind": "x"}, "unknown query parameter 'kind'; this endpoint accepts: none"),
    ("/api/v1/workload-types", {"external": "1"}, "unknown query parameter 'external'; this endpoint accepts: "
                                                  "externalTypesOnly"),
    ("/api/v1/workloads", {"kind": "NoSuchKind"}, "kind 'NoSuchKind' names no definition in force"),
    ("/api/v1/workloads", {"phase": ["Running", "Sleeping"]}, "phase must be one of"),
    ("/api/v1/workloads", {"labelSelector": "a b=c"}, "labelSelector: invalid requirement 'a b=c'"),
])
async def test_bad_parameters_are_refused_naming_them(client: httpx.AsyncClient, path: str, params: dict[str, Any],
                                                      message: str) -> None:
    response = await client.get(path, params=params)
    assert response.status_code == 400 and response.json()["error"] == "bad_request", response.text
    assert response.json()["message"].startswith(message), response.json()["message"]


@pytest.mark.parametrize(("path", "param"), [
    ("/api/v1/namespaces/team-a/workloads/core/Pod/runner", "foo"),
    ("/api/v1/namespaces/team-a/workloads/core/Pod/runner/phase", "wiat"),
    ("/api/v1/namespaces/team-a/pods/runner/workload", "foo"),
])
async def test_single_workload_endpoints_refuse_unknown_parameters(client: httpx.AsyncClient, path: str,
                                                                   param: str) -> None:
    # a misspelt `wait` must not turn a wait into a plain read (found trying it as a new user)
    answer = await client.get(path, params={param: "Completed"})
    assert answer.status_code == 400
    assert answer.json()["message"].startswith(f"unknown query parameter '{param}'")


async def test_single_workload_endpoints_still_answer_their_own_parameters(client: httpx.AsyncClient) -> None:
    # team-a/runner is a bare Running pod: a workload of its own, phase Running
    answer = await client.get("/api/v1/namespaces/team-a/workloads/core/Pod/runner/phase",
                              params={"wait": "Running", "timeout": "1s"})
    assert answer.status_code == 200 and answer.json()["phases"] == ["Running"]


@pytest.mark.parametrize(("path", "query", "param"), [
    ("/api/v1/workloads", "limit=1&limit=2", "limit"),
    ("/api/v1/workloads", "view=summary&view=full", "view"),
    ("/api/v1/workloads", "labelSelector=tier%3Dbatch&labelSelector=tier%3Dweb", "labelSelector"),
    ("/api/v1/namespaces/team-a/workloads", "cluster=a&cluster=b", "cluster"),
    ("/api/v1/namespaces/team-a/workloads/core/Pod/runner/phase", "wait=Running&wait=Failed", "wait"),
    ("/api/v1/namespaces/team-a/workloads/core/Pod/runner/phase", "timeout=1s&timeout=2s", "timeout"),
    ("/api/v1/workload-types", "externalTypesOnly=true&externalTypesOnly=false", "externalTypesOnly"),
])
async def test_a_single_valued_parameter_given_twice_is_refused_naming_it(client: httpx.AsyncClient, path: str,
                                                                         query: str, param: str) -> None:
    # before, the last value silently won (?limit=1&limit=2 gave a page of 2)
    answer = await client.get(f"{path}?{query}")
    assert answer.status_code == 400 and answer.json()["error"] == "bad_request", answer.text
    assert answer.json()["message"] == f"query parameter '{param}' is given more than once; give it once"


async def test_writes_refuse_a_repeated_or_unknown_parameter_before_writing(client: httpx.AsyncClient) -> None:
    # a misspelt dryRun must not turn a dry run into a write; two clusters must not pick the last
    patch = await client.patch("/api/v1/namespaces/team-a/workloads/core/Pod/runner/pod-template?dryrun=true",
                               json={"labels": {"team": "a"}})
    assert patch.status_code == 400 and patch.json()["message"].startswith("unknown query parameter 'dryrun'")
    created = await client.post("/api/v1/definitions?dryRun=true&dryRun=false", content="{}",
                                headers={"content-type": "application/json"})
    assert created.status_code == 400
    assert created.json()["message"] == "query parameter 'dryRun' is given more than once; give it once"


@pytest.mark.parametrize(("path", "query", "param", "shown"), [
    ("/api/v1/workloads", "phase=", "phase", ""),
    ("/api/v1/workloads", "phase=Running,", "phase", " in 'Running,'"),
    ("/api/v1/workloads", "kind=%20", "kind", " in ' '"),
    ("/api/v1/workloads", "namespace=team-a&namespace=", "namespace", ""),
    ("/api/v1/workloads", "node=", "node", ""),
    ("/api/v1/workloads", "definition=", "definition", ""),
    ("/api/v1/namespaces/team-a/workloads", "cluster=", "cluster", ""),
    ("/api/v1/namespaces/team-a/workloads/core/Pod/runner/phase", "wait=", "wait", ""),
])
async def test_an_empty_filter_value_is_refused_naming_it(client: httpx.AsyncClient, path: str, query: str,
                                                          param: str, shown: str) -> None:
    # before, ?phase= listed all 5 workloads and ?wait= answered at once without waiting
    answer = await client.get(f"{path}?{query}")
    assert answer.status_code == 400 and answer.json()["error"] == "bad_request", answer.text
    assert answer.json()["message"] == (f"query parameter '{param}' has an empty value{shown}; "
                                        "omit the parameter for no filter")


async def test_filters_that_may_repeat_or_be_empty_still_answer(client: httpx.AsyncClient) -> None:
    # kind/phase/namespace repeat (any of); an empty labelSelector or contains selects everything
    assert await names(client, phase=["Running", "Completed"], kind=["Pod"]) == ["team-a/runner", "team-b/done"]
    assert len(await names(client, labelSelector="", contains="")) == 5
