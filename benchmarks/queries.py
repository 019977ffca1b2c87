"""Warm query latency through the ASGI app in process (httpx.AsyncClient + ASGITransport).

The app is ``create_app(settings, reader=<SnapshotReader of the synthetic cluster>)`` with its
lifespan running. The cold figure is the lifespan start until every view is materialized;
then the first ``gpuSummary`` and every figure after it read materialized views (jq does not run):

* ``one_workload``: GraphQL ``workload(namespace, group, kind, name)`` of a random workload
  with roles, replicas, GPU figures and pods;
* ``page_of_100``: GraphQL ``workloads(first: 100, after: cursor)`` walking the pages in
  order, with roles, instances and GPU figures of every workload;
* ``gpu_summary``: GraphQL ``gpuSummary(groupBy: NAMESPACE)`` over all workloads.

Each loop is bounded in count and time (at least ``min_count`` samples).
"""

from __future__ import annotations

import asyncio
import gc
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

import workload_map.app as app_module
from workload_map.app import create_app
from workload_map.config import ResolverSettings, Settings

from benchmarks.asgi import in_process_client
from benchmarks.generator import Cluster
from benchmarks.stats import arepeat, summarize

ONE = """query One($ns: String, $group: String!, $kind: String!, $name: String!) {
  workload(namespace: $ns, group: $group, kind: $kind, name: $name) {
    name namespace kind phase
    replicas { desired current ready }
    gpu { requestedBySpec requestedByPods allocated }
    roles { name replicas { desired current ready } gpu { requestedBySpec requestedByPods allocated } }
    pods { name phase node ready }
  }
}"""

PAGE = """query Page($after: String) {
  workloads(first: 100, after: $after) {
    totalCount
    pageInfo { endCursor hasNextPage }
    nodes {
      name namespace kind phase
      replicas { desired current ready }
      gpu { requestedBySpec requestedByPods allocated }
      roles {
        name
        replicas { desired current ready }
        instances { id replicas { desired current ready } }
        gpu { requestedBySpec requestedByPods allocated }
      }
    }
  }
}"""

GPU_SUMMARY = """query Summary {
  gpuSummary(groupBy: NAMESPACE) { key workloads gpu { requestedBySpec requestedByPods allocated } }
}"""


SETTLE_S = 900.0
"""Bound of the wait for every view to be materialized, seconds."""

BUDGET_S = 30.0
"""Resolution budget of the benchmark's server, seconds (the server's default is 2 s). The
figures time queries over real resolutions; on the shared 2-core machine one resolution in
20,000 went over 2 s in two cold passes (load average 3-6; the slowest one of the same
20,000 resolved in process took 6 ms of CPU), which made it an error view and the run void."""


class QueryError(RuntimeError):
    """A benchmark query did not return data, or the views it would read are not real resolutions."""


async def settle(service: Any, timeout: float) -> None:
    """Wait until every view is materialized and check that none is a budget error.

    Raises:
        QueryError: not settled within ``timeout`` seconds (with the progress), or some
            resolutions exceeded the worker budget (the figures would time error views).
    """
    settled = await service.settled(timeout)
    materializer = getattr(service, "materializer", None)
    pool = materializer.pool if materializer is not None else None
    timeouts = pool.timeouts if pool is not None else 0
    if not settled:
        resolved, known = service.progress()
        raise QueryError(f"views not materialized within {timeout:g} s (resolved {resolved} of {known}; "
                         f"{timeouts} resolutions over the worker budget)")
    if timeouts or service.quarantined:
        raise QueryError(f"{timeouts} resolutions exceeded the worker budget and {len(service.quarantined)} "
                         "definitions were quarantined: the views are error views, not resolutions")


async def _gql(client: httpx.AsyncClient, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
    response = await client.post("/graphql", json={"query": query, "variables": variables or {}})
    if response.status_code != 200:
        raise QueryError(f"HTTP {response.status_code}: {response.text[:500]}")
    body: dict[str, Any] = response.json()
    if body.get("errors"):
        raise QueryError(f"GraphQL errors: {body['errors'][:2]}")
    return body["data"]


async def run(cluster: Cluster, reader: Any, *, max_count: int, max_seconds: float, min_count: int = 3,
              seed: int = 11, budget_s: float = BUDGET_S) -> dict[str, Any]:
    """Every warm-latency figure for one cluster (see module docstring); ``budget_s``: the resolution budget, s."""
    rng = random.Random(seed)
    ids = cluster.identities()
    with tempfile.TemporaryDirectory(prefix="wmap-bench-state-") as state:
        app = create_app(Settings(state_dir=Path(state), resolver=ResolverSettings(timeout_s=budget_s)),
                         reader=reader)
        # the collector as `wmap serve` has it (the app leaves the collector of a process that
        # passed its own reader alone): the loaded objects frozen, as the snapshot load does
        # while it reads, and the app's cold-pass step (``freeze_when_settled``: the views
        # frozen every 2,000) running from the start, as `wmap serve` starts it; a tree without
        # that step (`--before` of benchmarks.targets) gets the first freeze only
        freeze = getattr(app_module, "freeze_when_settled", None)
        gc.collect()
        gc.freeze()
        t0 = time.perf_counter()
        async with app.router.lifespan_context(app):
            async with in_process_client(app) as client:
                service = app.state.runtime.service
                step = asyncio.create_task(freeze(service)) if freeze is not None else None
                await settle(service, SETTLE_S)  # cold: every view materialized by the resolver pool
                cold = time.perf_counter() - t0
                if step is not None:
                    await step  # ends once settled: the views out of full collections, as in `wmap serve`
                views = service.workloads()
                cold_pods = sum(len(v.all_pods()) for v in views)
                t0 = time.perf_counter()
                data = await _gql(client, GPU_SUMMARY)
                first = time.perf_counter() - t0
                buckets = data["gpuSummary"]
                workloads_seen = sum(b["workloads"] for b in buckets)

                async def one(_: int) -> None:
                    ns, group, kind, name = ids[rng.randrange(len(ids))]
                    got = await _gql(client, ONE, {"ns": ns, "group": group, "kind": kind, "name": name})
                    if got["workload"] is None:
                        raise QueryError(f"workload {kind} {ns}/{name} not found")

                cursor: dict[str, str | None] = {"after": None}

                async def page(_: int) -> None:
                    got = (await _gql(client, PAGE, {"after": cursor["after"]}))["workloads"]
                    info = got["pageInfo"]
                    cursor["after"] = info["endCursor"] if info["hasNextPage"] else None

                async def summary(_: int) -> None:
                    await _gql(client, GPU_SUMMARY)

                resolutions_before = service.resolutions
                one_s = await arepeat(one, max_count=max_count, max_seconds=max_seconds, min_count=min_count)
                page_s = await arepeat(page, max_count=max(min_count, max_count // 2), max_seconds=max_seconds,
                                       min_count=min_count)
                sum_s = await arepeat(summary, max_count=max(min_count, max_count // 4), max_seconds=max_seconds,
                                      min_count=min_count)
                warm_resolutions = service.resolutions - resolutions_before
    return {
        "workloads_listed": workloads_seen,
        "cold_service_pass": {"workloads": len(views), "pods": cold_pods, "seconds": round(cold, 3),
                              "workloads_per_s": round(len(views) / cold, 1) if cold else None,
                              "pods_per_s": round(cold_pods / cold, 1) if cold else None,
                              "what": "lifespan start to every view materialized: top-level pass, "
                                      "descendants, resolve in the worker pool"},
        "first_gpu_summary_ms": round(first * 1000, 1),
        "one_workload_ms": summarize([s * 1000 for s in one_s], "ms").to_dict(),
        "page_of_100_ms": summarize([s * 1000 for s in page_s], "ms").to_dict(),
        "gpu_summary_ms": summarize([s * 1000 for s in sum_s], "ms").to_dict(),
        "resolutions_during_warm_queries": warm_resolutions,
    }


async def profile_queries(cluster: Cluster, reader: Any, *, count: int = 3) -> dict[str, Any]:
    """cProfile of warm ``one_workload``, ``page_of_100`` and ``gpu_summary`` requests."""
    import cProfile

    from benchmarks.profiling import summary

    ids = cluster.identities()
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="wmap-bench-state-") as state:
        app = create_app(Settings(state_dir=Path(state), resolver=ResolverSettings(timeout_s=BUDGET_S)),
                         reader=reader)
        async with app.router.lifespan_context(app):
            async with in_process_client(app) as client:
                await _gql(client, GPU_SUMMARY)  # fill the memo
                for name, query, n in (("one_workload", ONE, 20 * count), ("page_of_100", PAGE, count),
                                       ("gpu_summary", GPU_SUMMARY, count)):
                    profile = cProfile.Profile()
                    profile.enable()
                    for i in range(n):
                        if query is ONE:
                            ns, group, kind, wname = ids[i * 7919 % len(ids)]
                            variables: dict[str, Any] | None = {"ns": ns, "group": group, "kind": kind, "name": wname}
                        else:
                            variables = {"after": None} if query is PAGE else None
                        await _gql(client, query, variables)
                    profile.disable()
                    out[name] = {"requests": n, **summary(profile, cumulative_filter=("/server/", "/schema/"))}
    return out
