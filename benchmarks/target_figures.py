"""The figures behind ``python -m benchmarks.targets``, one function per figure (issue 23 "Targets").

Each function runs in a child process of ``benchmarks.targets`` (``python -m
benchmarks.targets --figure NAME``), with the server code of the revision under test first
on ``PYTHONPATH``; it takes the figure's parameters (a dict) and returns a dict of plain
values: the figures, and the floor when the target is a ratio. Every function reuses an
existing benchmark module (named in its docstring); every loop there is bounded in count
and time.

This module imports nothing from the server at import time: a resolver worker started by
the fork server imports the parent's ``__main__`` module first (``workload_map.materialization.pool``).
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable


def _wall(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = fn()
    return time.perf_counter() - started, value


def snapshot(p: dict[str, Any]) -> dict[str, Any]:
    """``wmap serve --snapshot DUMP``: seconds to ready beside ``json.load`` of the dump (the floor),
    and ``/livez`` from the start (``benchmarks.fastjson.serve``: first answer, p99, slowest).

    Params: ``dump`` (a path written by ``benchmarks.snapshot.write_dump``), ``timeout`` (s).
    """
    from benchmarks.fastjson import serve

    path = Path(p["dump"])
    floor_s, whole = _wall(lambda: json.loads(path.read_bytes()))
    objects = len(whole.get("items", []))
    del whole
    served = serve(path, float(p["timeout"]))
    ready = served.get("ready_s")
    return {"objects": objects, "json_load_s": round(floor_s, 2), **served,
            "ratio": round(ready / floor_s, 2) if ready and floor_s else None}


def warm(p: dict[str, Any]) -> dict[str, Any]:
    """Cold resolution rate (lifespan start to every view, the server's pool of ``workers``) and warm
    queries over GraphQL in process (``benchmarks.queries.run``: ASGI transport, no socket).

    Params: ``workloads``, ``max_count``, ``max_seconds``, ``seed``.
    """
    from benchmarks import memory, queries
    from benchmarks.generator import generate

    cluster = generate(int(p["workloads"]), seed=int(p["seed"]))
    reader, load = memory.load_reader(cluster)
    figs = asyncio.run(queries.run(cluster, reader, max_count=int(p["max_count"]),
                                   max_seconds=float(p["max_seconds"])))
    return {"load": load, **figs}


def churn(p: dict[str, Any]) -> dict[str, Any]:
    """Change -> visible to a feed subscriber at ``rate`` object changes/s in process, half of them
    touching no read field (``benchmarks.churn.run_once`` with read sets on).

    Params: ``workloads``, ``rate``, ``seconds``, ``seed``.
    """
    from benchmarks import churn as churn_bench

    return asyncio.run(churn_bench.run_once(int(p["workloads"]), rate=int(p["rate"]), seconds=float(p["seconds"]),
                                            seed=int(p["seed"]), read_sets=True))


def cli(p: dict[str, Any]) -> dict[str, Any]:
    """``wmap describe -f`` of one small file: median wall and CPU seconds (``benchmarks.startup.run_once``,
    after a warm-up). A figure of its own, apart from :func:`cli_big`: the two sides' small-file runs
    then follow each other, instead of the second side's following a minute of the first side's
    big-file run (which cost it 3-17 ms, twice).

    Params: ``repeats``.
    """
    from benchmarks import startup

    small = [*_wmap(), "describe", "-f", str(startup.SMALL_FILE)]
    startup.run_once(small, _env())
    runs = [startup.run_once(small, _env()) for _ in range(int(p["repeats"]))]
    return {"small_file": startup.SMALL_FILE.name, "repeats": len(runs),
            "small_wall_median_s": round(statistics.median(r[0] for r in runs), 3),
            "small_cpu_median_s": round(statistics.median(r[1] for r in runs), 3)}


def cli_big(p: dict[str, Any]) -> dict[str, Any]:
    """``wmap describe -f -o json`` of a dump of ``big_workloads`` workloads: wall, CPU and peak RSS of one run.

    Params: ``big`` (a dump path), ``timeout`` (s).
    """
    big = [*_wmap(), "describe", "-f", str(p["big"]), "-o", "json"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(big, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          timeout=float(p["timeout"]))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    out: dict[str, Any] = {"big_exit": done.returncode, "big_wall_s": round(time.perf_counter() - started, 1),
                           "big_cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 1),
                           "big_peak_rss_bytes": after.ru_maxrss * 1024}
    if done.returncode != 0:
        out["big_error"] = done.stderr.decode("utf-8", "replace")[-400:]
    return out


def _wmap() -> list[str]:
    """Each side's own entry point (its server/ is first on PYTHONPATH): the venv's console script
    names one function, which an older or newer tree may not have."""
    return [sys.executable, "-m", "workload_map"]


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def live(p: dict[str, Any]) -> dict[str, Any]:
    """Against a real kube-apiserver + etcd (``benchmarks.cluster``, ``benchmarks.recovery``): load the
    generator's cluster, then paired runs of the raw paginated pod list (the floor) and an
    informer's sync of the same pods; update -> visible over GraphQL at ``rate`` updates/s and
    at each rate of ``sweep`` (the row reads the highest the API server sustains);
    an API server restart (``recovery.outage_once`` over the app watching every namespace)
    with the pod list raw right after it.

    Params: ``pods``, ``load_budget_s``, ``repeats``, ``updates``, ``rate``, ``sweep``, ``outage_s``, ``seed``.
    """
    from benchmarks import cluster as cluster_bench
    from benchmarks.stats import summarize

    handle = cluster_bench.ControlPlaneHandle()
    out: dict[str, Any] = {}
    try:
        out["control_plane"] = handle.start()
        cp = handle.cp
        loaded = asyncio.run(cluster_bench.load(cp, cluster_bench.cluster_for(int(p["pods"]), int(p["seed"])),
                                                target_pods=int(p["pods"]), budget_s=float(p["load_budget_s"])))
        out["load"] = {"pods": len(loaded.pods), "objects": loaded.objects, "seconds": round(loaded.seconds, 1),
                       "scaled_down": loaded.scaled_down or None, "error_count": len(loaded.errors)}
        floors, syncs = [], []
        for _ in range(int(p["repeats"])):
            floors.append(cluster_bench.list_floor(cp)[0])
            syncs.append(asyncio.run(cluster_bench.informer_sync(cp.admin_kubeconfig))[0])
        f, s = summarize(floors, "s"), summarize(syncs, "s")
        out["initial_sync"] = {"list_floor_s": f.to_dict(), "informer_sync_s": s.to_dict(),
                               "ratio": round(s.median / f.median, 2) if f.median else None}
        upd = asyncio.run(cluster_bench.update_to_phase(cp, loaded, count=int(p["updates"]), rate=float(p["rate"]),
                                                        sweep=tuple(float(r) for r in p.get("sweep", ()))))
        out["update_to_phase"] = {k: v for k, v in upd.items() if not k.startswith("profile")}
        namespace = next((pod.namespace for pod in loaded.pods), "default")
        out["relist"] = asyncio.run(_relist(cp, namespace, float(p["outage_s"])))
    finally:
        handle.stop()
    return out


async def _relist(cp: Any, namespace: str, outage_s: float) -> dict[str, Any]:
    from workload_map.app import create_app
    from workload_map.config import KubeSettings, Settings

    from benchmarks import cluster as cluster_bench
    from benchmarks import recovery

    with tempfile.TemporaryDirectory(prefix="wmap-bench-state-") as state:
        kube = KubeSettings(kubeconfig=str(cp.admin_kubeconfig), stale_after_s=5.0)  # as benchmarks.recovery
        app = create_app(Settings(kube=kube, state_dir=Path(state)))
        runtime = app.state.runtime
        async with app.router.lifespan_context(app):
            if await recovery._wait(runtime.is_ready, 300) is None:
                return {"skipped": "the app did not become ready within 300 s"}
            figs = await recovery.outage_once(cp, runtime, namespace, outage_s=outage_s, timeout=300)
    floor = cluster_bench.list_floor(cp)[0]
    synced = figs.get("synced_again_s")
    return {**figs, "list_floor_after_s": round(floor, 2),
            "ratio": round(synced / floor, 2) if synced is not None and floor else None}


FIGURES: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "snapshot": snapshot, "warm": warm, "churn": churn, "cli": cli, "cli_big": cli_big, "live": live}


def run_child(name: str, params: dict[str, Any], result: Path) -> int:
    """Run figure ``name`` here; write ``{figures, load_start, load_end, code}`` as JSON to ``result``."""
    import logging

    import workload_map

    logging.disable(logging.WARNING)  # the live figures' outage logs every reflector's connection error
    load_start = os.getloadavg()
    started = time.monotonic()
    doc: dict[str, Any] = {"code": str(Path(workload_map.__file__).resolve().parent)}
    try:
        doc["figures"] = FIGURES[name](params)
    except Exception as exc:  # noqa: BLE001 - reported in the table, the other figures still run
        doc["error"] = f"{type(exc).__name__}: {exc}"[:600]
    doc.update(load_start=[round(x, 2) for x in load_start], load_end=[round(x, 2) for x in os.getloadavg()],
               seconds=round(time.monotonic() - started, 1))
    result.write_text(json.dumps(doc), encoding="utf-8")
    print(f"  {name}: {doc.get('error') or 'done'} in {doc['seconds']} s", file=sys.stderr, flush=True)
    return 0
