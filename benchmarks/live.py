"""``python -m benchmarks.live``: the live figures of issue 23 against a real kube-apiserver.

On the test control plane (``tests/cluster``: kube-apiserver + etcd on 127.0.0.1), a
generated cluster is loaded (``benchmarks.cluster.load``, bounded by ``--load-budget``),
then, each bounded in count and time:

1. **ready vs floor**: an ``InformerCache`` over pods only, ``start()`` until synced, against
   a raw paginated list of the same pods (``limit=500``, ``json.loads`` per page), runs
   alternated (``benchmarks.cluster.informer_sync`` and ``list_floor``); target 1.5x.
2. **relist after an API server restart**: the same cache, synced; kube-apiserver stopped
   and started again (etcd keeps everything, so every object keeps its resourceVersion);
   from the new server's first ``/readyz`` 200 (probed by the cache's process) until the
   pod reflector is synced again with nothing down (a relist: the watch from the old
   resourceVersion gets 410), against the raw list measured right after; target 1.5x.
3. **/livez throughout**: the app (``create_app``, every definition kind) started over the
   cluster with ``/livez`` asked every 20 ms through the ASGI app on the server's loop
   (each latency counted from when the probe was due, so a held loop counts in full; what a
   probe sees, minus the socket): first answer after the start, p99 and max while
   the caches list (cold start) and during the pod status churn of
   ``benchmarks.cluster.update_to_phase`` (change -> visible through GraphQL), at each
   ``--rates`` value; targets: first answer within 1 s, p99 <= 50 ms, change -> visible
   p99 <= 250 ms at the highest rate the API server sustains (the achieved rate is printed).

Prints one JSON document (``--json PATH`` also writes it) with the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.asgi import in_process_client
from benchmarks.stats import summarize

LIVEZ_EVERY_S = 0.02
LIVEZ_MAX_SAMPLES = 60_000
"""Bound on samples of one sampler (20 minutes at one every 20 ms)."""


def loadavg() -> str:
    """``/proc/loadavg`` (first three figures), or "" where there is none."""
    try:
        return " ".join(Path("/proc/loadavg").read_text(encoding="utf-8").split()[:3])
    except OSError:
        return ""


class LivezSampler:
    """Asks ``GET /livez`` of an ASGI app every ``LIVEZ_EVERY_S`` seconds; keeps the latencies.

    ``mark(name)`` starts a new phase: latencies are kept per phase (``figures()``).
    Bounded by ``LIVEZ_MAX_SAMPLES``; ``stop()`` ends it.
    """

    def __init__(self, app: Any, started_at: float) -> None:

        self._client = in_process_client(app, timeout=30)
        self.started_at = started_at
        self.first_answer_s: float | None = None
        self.phases: dict[str, list[float]] = {}
        self._phase: list[float] = []
        self._task: asyncio.Task[None] | None = None

    def mark(self, name: str) -> None:
        self._phase = self.phases.setdefault(name, [])

    def start(self, phase: str) -> None:
        self.mark(phase)
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        due = time.monotonic()
        for _ in range(LIVEZ_MAX_SAMPLES):
            r = await self._client.get("/livez")
            t1 = time.monotonic()
            if r.status_code == 200:
                if self.first_answer_s is None:
                    self.first_answer_s = t1 - self.started_at
                # from when the probe was due: a loop held by other work delays the sampler
                # itself, and a probe from outside would have waited as long
                self._phase.append((t1 - due) * 1000)
            due = t1 + LIVEZ_EVERY_S
            await asyncio.sleep(LIVEZ_EVERY_S)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self._client.aclose()

    def figures(self) -> dict[str, Any]:
        out: dict[str, Any] = {"first_answer_s": None if self.first_answer_s is None else round(self.first_answer_s, 3)}
        for name, values in self.phases.items():
            out[name] = summarize(values, "ms").to_dict() if values else {"count": 0}
        return out


async def relist_after_restart(kubeconfig: str, *, timeout: float = 300.0) -> dict[str, Any]:
    """Point 2 of the module docstring, in a child while the parent restarts the API server.

    Prints ``synced`` once the pod informer is synced. Then, polling every 5 ms: once the
    reflector is down (its watch broke), ``GET /readyz`` (the cache's own probe) until the
    new server answers; from that answer until the reflector is synced again with nothing
    down.
    """
    from workload_map.gvk import GVK
    from workload_map.kube.cache import CacheOptions, InformerCache
    from workload_map.kube.client import connect

    pod = GVK("", "v1", "Pod")
    cache = InformerCache(await connect(kubeconfig), options=CacheOptions(watch_crds=False), close_client=True)
    cache.watch(pod)
    await cache.start()
    try:
        if not await cache.wait_synced(timeout):
            return {"skipped": f"the pod informer did not sync within {timeout} s"}
        reflector = next(iter(cache._informers[pod].reflectors.values()))
        relists, events = reflector.relists, reflector.events
        probe = cache._probe
        assert probe is not None
        print("synced", flush=True)
        deadline = time.monotonic() + timeout
        while reflector.down_since is None and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        up: float | None = None
        while up is None and time.monotonic() < deadline:
            if await probe():
                up = time.monotonic()
            else:
                await asyncio.sleep(0.005)
        synced: float | None = None
        while up is not None and time.monotonic() < deadline:
            if reflector.state == "synced" and reflector.down_since is None:
                synced = time.monotonic() - up
                break
            await asyncio.sleep(0.005)
        return {"synced_again_s": None if synced is None else round(synced, 3), "pods": cache.count(pod),
                "relists": reflector.relists - relists, "watch_events_during": reflector.events - events}
    finally:
        await cache.stop()


class _ControlPlaneView:
    """What ``benchmarks.cluster._burst`` reads of a control plane, rebuilt in a child."""

    def __init__(self, req: dict[str, Any]) -> None:
        from types import SimpleNamespace

        self.server, self.ca_file = req["server"], Path(req["ca"])
        self.admin_kubeconfig = Path(req["kubeconfig"])
        self.pki = SimpleNamespace(clients={"admin": SimpleNamespace(cert=req["cert"], key=req["key"])})
        self._pids: dict[str, int | None] = dict(req.get("pids") or {})

    def pids(self) -> dict[str, int | None]:
        """kube-apiserver's and etcd's process ids, as the parent's control plane gave them."""
        return self._pids


async def app_livez_and_churn(cp: Any, plan: list[Any], *, rates: list[float], updates: int,
                              ready_timeout: float = 600.0) -> dict[str, Any]:
    """Point 3 of the module docstring (``plan``: ``benchmarks.cluster._plan_updates``)."""
    import tempfile

    from benchmarks.cluster import _burst
    from workload_map.app import create_app
    from workload_map.config import KubeSettings, Settings

    out: dict[str, Any] = {"rates": {}}
    with tempfile.TemporaryDirectory(prefix="wmap-bench-state-") as state:
        settings = Settings(state_dir=Path(state), kube=KubeSettings(kubeconfig=str(cp.admin_kubeconfig)))
        t_start = time.monotonic()
        app = create_app(settings)
        async with app.router.lifespan_context(app):
            sampler = LivezSampler(app, t_start)
            sampler.start("cold_start_ms")
            runtime = app.state.runtime
            try:
                while not runtime.is_ready():
                    if time.monotonic() - t_start > ready_timeout:
                        return {"skipped": f"the app did not become ready within {ready_timeout} s"}
                    await asyncio.sleep(0.05)
                out["app_ready_s"] = round(time.monotonic() - t_start, 2)
                sampler.mark("first_5s_after_ready_ms")
                await asyncio.sleep(5.0)

                async with in_process_client(app, timeout=60) as client:
                    import functools

                    from benchmarks.cluster import pod_phases

                    query = functools.partial(pod_phases, client)

                    for i, rate in enumerate(rates):
                        part = plan[i * updates:(i + 1) * updates]
                        if not part:
                            break
                        sampler.mark(f"churn_{rate:g}_per_s_ms")
                        figures = await _burst(cp, runtime, query, part, rate, 6.0)
                        figures["loadavg"] = loadavg()
                        out["rates"][f"{rate:g}"] = figures
            finally:
                await sampler.stop()
            out["livez"] = sampler.figures()
    return out


def child(req: dict[str, Any]) -> dict[str, Any]:
    """One figure measured in this process (``--child``: the request comes on the first stdin line)."""
    from benchmarks import cluster

    figure = req["figure"]
    if figure == "sync":
        seconds, count, _, _ = asyncio.run(cluster.informer_sync(Path(req["kubeconfig"])))
        return {"informer_sync_s": round(seconds, 3), "pods": count}
    if figure == "relist":
        return asyncio.run(relist_after_restart(req["kubeconfig"]))
    if figure == "app":
        plan = [(cluster.LoadedPod(ns, name, uid, phase, tuple(wl)), to)
                for (ns, name, uid, phase, wl), to in req["plan"]]
        return asyncio.run(app_livez_and_churn(_ControlPlaneView(req), plan, rates=req["rates"],
                                               updates=req["updates"]))
    raise ValueError(f"unknown figure {figure!r}")


class _Child:
    """A ``python -m benchmarks.live --child`` process running one variant's code."""

    def __init__(self, server_dir: str | None, req: dict[str, Any]) -> None:
        import os
        import subprocess

        env = dict(os.environ)
        root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join([p for p in (server_dir, root) if p])
        self.proc = subprocess.Popen([sys.executable, "-m", "benchmarks.live", "--child"], cwd=root, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()

    def line(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline()

    def result(self, timeout: float) -> dict[str, Any]:
        import subprocess

        try:
            out, _ = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
            return {"skipped": f"child timed out after {timeout} s"}
        lines = [x for x in out.splitlines() if x.startswith("{")]
        return json.loads(lines[-1]) if lines else {"skipped": f"child exited {self.proc.returncode}"}


def run(*, pods: int, load_budget_s: float, repeats: int, rates: list[float], updates: int,
        variants: dict[str, str | None], seed: int = 5) -> dict[str, Any]:
    """Every figure of the module docstring for each variant (name -> server dir, ``None``:
    this checkout), alternated; raises ``ClusterUnavailable`` without a control plane."""
    from benchmarks import cluster

    handle = cluster.ControlPlaneHandle()
    doc: dict[str, Any] = {"loadavg_start": loadavg(), "variants": list(variants)}
    try:
        doc["control_plane"] = handle.start()
        cp = handle.cp
        loaded = asyncio.run(cluster.load(cp, cluster.cluster_for(pods, seed), target_pods=pods,
                                          budget_s=load_budget_s))
        doc["load"] = {"workloads": loaded.workloads, "objects": loaded.objects, "pods": len(loaded.pods),
                       "seconds": round(loaded.seconds, 1), "scaled_down": loaded.scaled_down or None,
                       "errors": loaded.errors[:3]}
        _log(f"loaded {len(loaded.pods)} pods, {loaded.objects} objects in {loaded.seconds:.0f} s")
        pki = cp.pki.clients["admin"]
        base = {"kubeconfig": str(cp.admin_kubeconfig), "server": cp.server, "ca": str(cp.ca_file),
                "cert": str(pki.cert), "key": str(pki.key)}
        ready: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
        relist: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
        for _ in range(max(1, min(repeats, 5))):
            for name, server_dir in variants.items():
                floor = cluster.list_floor(cp)[0]
                figures = _Child(server_dir, {**base, "figure": "sync"}).result(600)
                figures.update(list_floor_s=round(floor, 3), loadavg=loadavg())
                if figures.get("informer_sync_s"):
                    figures["ratio"] = round(figures["informer_sync_s"] / floor, 2)
                ready[name].append(figures)
                _log(f"ready {name}: {json.dumps(figures)}")
            for name, server_dir in variants.items():
                proc = _Child(server_dir, {**base, "figure": "relist"})
                if proc.line().strip() == "synced":
                    cp.stop_apiserver()
                    cp.start_apiserver()  # returns once /readyz is 200
                figures = proc.result(600)
                floor = cluster.list_floor(cp)[0]
                figures.update(list_floor_s=round(floor, 3), loadavg=loadavg())
                if figures.get("synced_again_s"):
                    figures["ratio"] = round(figures["synced_again_s"] / floor, 2)
                relist[name].append(figures)
                _log(f"relist after restart {name}: {json.dumps(figures)}")
        doc["ready"], doc["relist_after_restart"] = ready, relist
        plan = cluster._plan_updates(loaded.pods, updates * len(rates) * len(variants))
        doc["app"] = {}
        for i, (name, server_dir) in enumerate(variants.items()):
            part = plan[i * updates * len(rates):(i + 1) * updates * len(rates)]
            req = {**base, "pids": cp.pids(), "figure": "app", "rates": rates, "updates": updates,  # after the restarts
                   "plan": [((p.namespace, p.name, p.uid, p.phase, list(p.workload)), to) for p, to in part]}
            doc["app"][name] = _Child(server_dir, req).result(1800)
            _log(f"app {name}: {json.dumps(doc['app'][name])[:2000]}")
        doc["loadavg_end"] = loadavg()
    finally:
        handle.stop()
    return doc


def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    """Run; print the JSON document (exit 1 when the control plane is unavailable)."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.live", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pods", type=int, default=20_000, help="pods to load (20000)")
    p.add_argument("--load-budget", type=float, default=900.0, help="seconds the load may take (900)")
    p.add_argument("--repeats", type=int, default=2, help="ready and relist runs each (2)")
    p.add_argument("--rates", default="100,200,400", help="pod status updates per second, comma-separated")
    p.add_argument("--updates", type=int, default=600, help="updates per rate (600)")
    p.add_argument("--json", type=Path, default=None, help="also write the document here")
    p.add_argument("--before", default=None,
                   help="server directory of the code to compare with (its figures run alternated with this checkout's)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(child(json.loads(sys.stdin.readline()))), flush=True)
        return 0
    from benchmarks.cluster import ClusterUnavailable

    rates = [float(r) for r in args.rates.split(",") if r.strip()][:6]
    variants: dict[str, str | None] = {"before": args.before} if args.before else {}
    variants["after"] = None
    try:
        doc = run(pods=args.pods, load_budget_s=args.load_budget, repeats=args.repeats, rates=rates,
                  updates=max(1, min(args.updates, 5000)), variants=variants)
    except ClusterUnavailable as exc:
        print(f"skipped: {exc}", file=sys.stderr)
        return 1
    text = json.dumps(doc, indent=2)
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
