"""``python -m benchmarks.recovery``: how fast live mode recovers from an API server outage.

Against the test control plane (``tests/cluster``; kube-apiserver + etcd on 127.0.0.1), the
app (``create_app`` with the admin kubeconfig: an ``InformerCache`` over every definition
kind, restricted to one namespace holding ``--pods`` pods) runs in this process. Then, per
repetition:

1. ``stop_apiserver()`` (etcd keeps the data; kube-apiserver's graceful shutdown takes
   about 10 s, ``stop_s``); the time from the stop request until the cluster is flagged
   stale (``workload_map.kube.freshness``, threshold ``--stale-after``) is recorded;
2. ``--outage`` seconds after the process exited, ``start_apiserver()``, which returns once
   ``/readyz`` answers 200 ("API server ready");
3. **synced again**: from "ready" until every informer is settled with no reflector down
   (``InformerStatus.down_since`` is ``None`` everywhere) and the stale flag is cleared;
4. **change visible**: a pod is created right after that; the time from just before the
   POST until a client subscriber queue (``Reader.subscribe``, what SSE and GraphQL
   subscriptions read) delivers its ``ADDED`` event.

Targets (issue 18): synced again within 5 s of the API server being ready after a 30 s
outage, the change visible within 1 s. Every wait is bounded (``--timeout``). Prints one
line per repetition and a summary; ``--json PATH`` also writes the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_SYNC_S = 5.0
TARGET_CHANGE_S = 1.0


def _pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"wmap.bench/recovery": "1"}},
            "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}}


def recovered(runtime: Any) -> bool:
    """True when every informer of the app's ``Runtime`` is settled, none is down and none stale."""
    states = runtime.states()
    return bool(states) and all(s.is_settled and s.down_since is None and not s.stale for s in states.values())


async def _wait(predicate: Any, timeout: float, interval: float = 0.02) -> float | None:
    """Seconds until ``predicate()`` holds (polled), ``None`` after ``timeout``."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if predicate():
            return time.monotonic() - t0
        await asyncio.sleep(interval)
    return None


async def _created_event(queue: asyncio.Queue[Any], name: str, timeout: float) -> bool:
    """Drain ``queue`` until the ADDED event of pod ``name`` arrives (bounded by ``timeout``)."""
    try:
        async with asyncio.timeout(timeout):
            while True:
                event = await queue.get()
                meta = event.obj.get("metadata") or {}
                if event.type == "ADDED" and event.gvk.kind == "Pod" and meta.get("name") == name:
                    return True
    except TimeoutError:
        return False


async def outage_once(cp: Any, runtime: Any, namespace: str, *, outage_s: float, timeout: float = 60.0
                      ) -> dict[str, Any]:
    """One outage: stop the API server for ``outage_s`` seconds, start it, measure recovery.

    Args:
        cp: a started ``tests.cluster.controlplane.ControlPlane``.
        runtime: the app's ``Runtime`` (its reader is the live ``InformerCache``), synced.
        namespace: the namespace the cache watches (a pod is created there).
        outage_s: seconds the API server stays down.
        timeout: bound of each wait, in seconds.

    Returns:
        ``{outage_s (stop request until ready again), stop_s (kube-apiserver shutdown), flagged_stale_s, synced_again_s,
        change_visible_s, relists (full lists the recovery needed), informers, probes,
        wakeups}`` in seconds and counts; a figure is ``None``
        when its wait ran out.
    """
    cache = runtime.reader
    relists = sum(st.relists for st in runtime.states().values())
    t_stop = time.monotonic()
    await asyncio.to_thread(cp.stop_apiserver)
    stopped = time.monotonic() - t_stop
    flagged = await _wait(lambda: any(s.stale for s in runtime.states().values()), outage_s + timeout)
    flagged = None if flagged is None else flagged + stopped  # from the stop request
    await asyncio.sleep(max(0.0, outage_s - (time.monotonic() - t_stop - stopped)))  # down for outage_s
    await asyncio.to_thread(cp.start_apiserver)  # returns once /readyz is 200
    down = time.monotonic() - t_stop
    synced = await _wait(lambda: recovered(runtime), timeout)
    relists = sum(st.relists for st in runtime.states().values()) - relists
    queue = cache.subscribe()
    try:
        name = f"after-{secrets.token_hex(3)}"
        t0 = time.monotonic()
        async with cp.async_client() as c:
            r = await c.post(f"/api/v1/namespaces/{namespace}/pods", json=_pod(name))
            r.raise_for_status()
        seen = await _created_event(queue, name, timeout)
        change = time.monotonic() - t0 if seen else None
    finally:
        cache.unsubscribe(queue)
    return {"outage_s": round(down, 1), "stop_s": round(stopped, 1),
            "flagged_stale_s": _round(flagged), "synced_again_s": _round(synced), "change_visible_s": _round(change),
            "relists": relists, "informers": len(runtime.states()), "probes": cache.probes, "wakeups": cache.wakeups}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


async def run_app(cp: Any, *, pods: int, outage_s: float, repeats: int, stale_after: float) -> list[dict[str, Any]]:
    """Load ``pods`` pods into a fresh namespace, start the app over it, run the outages."""
    from workload_map.app import create_app
    from workload_map.config import KubeSettings, Settings

    namespace = f"bench-recovery-{secrets.token_hex(3)}"
    async with cp.async_client() as c:
        (await c.post("/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace",
                                                  "metadata": {"name": namespace}})).raise_for_status()
        gate = asyncio.Semaphore(12)

        async def one(i: int) -> None:
            async with gate:
                (await c.post(f"/api/v1/namespaces/{namespace}/pods", json=_pod(f"p-{i}"))).raise_for_status()

        await asyncio.gather(*(one(i) for i in range(pods)))
    with tempfile.TemporaryDirectory() as state:
        settings = Settings(kube=KubeSettings(kubeconfig=str(cp.admin_kubeconfig), namespaces=(namespace,),
                                              stale_after_s=stale_after), state_dir=Path(state))
        app = create_app(settings)
        runtime = app.state.runtime
        async with app.router.lifespan_context(app):
            if await _wait(lambda: runtime.is_ready(), 120) is None:
                raise RuntimeError("the app did not become ready within 120 s")
            results = []
            for i in range(repeats):
                figures = await outage_once(cp, runtime, namespace, outage_s=outage_s)
                print(f"outage {i + 1}: {json.dumps(figures)}", flush=True)
                results.append(figures)
            return results


def summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Worst figures over the repetitions and whether the targets were met."""
    sync = [r["synced_again_s"] for r in results]
    change = [r["change_visible_s"] for r in results]
    worst_sync = None if None in sync else max(sync)
    worst_change = None if None in change else max(change)
    return {"synced_again_s_max": worst_sync, "change_visible_s_max": worst_change,
            "target_synced_again_s": TARGET_SYNC_S, "target_change_visible_s": TARGET_CHANGE_S,
            "met": worst_sync is not None and worst_change is not None and worst_sync <= TARGET_SYNC_S
            and worst_change <= TARGET_CHANGE_S}


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print per-outage figures and the summary (exit 1 when no cluster)."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.recovery", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--outage", type=float, default=30.0, help="seconds the API server stays down (30)")
    p.add_argument("--repeats", type=int, default=2, help="outages (2)")
    p.add_argument("--pods", type=int, default=200, help="pods in the watched namespace (200)")
    p.add_argument("--stale-after", type=float, default=5.0, help="staleness threshold of the app (5)")
    p.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = p.parse_args(argv)
    from benchmarks.cluster import ClusterUnavailable, ControlPlaneHandle

    try:
        handle = ControlPlaneHandle()
    except ClusterUnavailable as exc:
        print(f"skipped: {exc}", file=sys.stderr)
        return 1
    handle.start()
    try:
        results = asyncio.run(run_app(handle.cp, pods=args.pods, outage_s=args.outage,
                                      repeats=max(1, min(args.repeats, 10)), stale_after=args.stale_after))
    finally:
        handle.stop()
    doc = {"outages": results, "summary": summary(results)}
    print(json.dumps(doc["summary"]))
    if args.json is not None:
        args.json.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
