"""Warm GraphQL latency over HTTP: uvicorn servers on 127.0.0.1, one real HTTP client.

Each server is a child process (``python -m benchmarks.queries_http serve``) that builds
the generator's cluster in process (a ``SnapshotReader``, as :mod:`benchmarks.queries`
does), starts ``create_app`` under uvicorn on a socket bound to 127.0.0.1, waits until
every view is materialized and prints ``READY <port>``. Which code a server runs is its
``PYTHONPATH`` (``--server-path``, repeated: one server per path; ``-`` is this checkout),
so "before" and "after" run side by side on the same cluster and the client alternates
between them request by request (paired samples; the machine's load hits both alike).

Figures per server, in milliseconds (client wall time of one request, keep-alive
connection): ``one_workload`` (the ``ONE`` query of :mod:`benchmarks.queries` for a
random workload), ``page_of_100`` (``PAGE``, walking the pages in order) and
``gpu_summary`` (``GPU_SUMMARY``); plus the server's CPU seconds (user + system, from
``/proc/<pid>/stat``) over each figure's loop. Every answer of every server is compared
byte for byte with the first server's (``mismatches``). Every loop is bounded in count and
time.

Usage::

    python -m benchmarks.queries_http --workloads 2000 --server-path BASE/server --server-path -
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.machine import cpu_seconds
from benchmarks.queries import GPU_SUMMARY, ONE, PAGE
from benchmarks.stats import summarize

READY_TIMEOUT_S = 3600.0
"""Longest wait for a server to build its cluster and materialize every view."""


async def _serve(workloads: int, seed: int) -> None:
    """Child: build the cluster, serve it on 127.0.0.1, print ``READY <port>`` once settled."""
    import uvicorn

    from workload_map.app import create_app
    from workload_map.config import ResolverSettings, Settings

    from benchmarks.generator import generate

    reader = generate(workloads, seed=seed).reader()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    with tempfile.TemporaryDirectory(prefix="wmap-bench-state-") as state:
        app = create_app(Settings(state_dir=Path(state), resolver=ResolverSettings(timeout_s=60.0, workers=2)), reader=reader)
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False))
        task = asyncio.create_task(server.serve(sockets=[sock]))
        for _ in range(int(READY_TIMEOUT_S * 10)):
            if server.started or task.done():
                break
            await asyncio.sleep(0.1)
        await app.state.runtime.service.settled(READY_TIMEOUT_S)
        print(f"READY {sock.getsockname()[1]}", flush=True)
        await task


class Server:
    """A child server process and its keep-alive HTTP connection."""

    def __init__(self, path: str, workloads: int, seed: int) -> None:
        env = dict(os.environ)
        if path != "-":
            env["PYTHONPATH"] = path + os.pathsep + env.get("PYTHONPATH", "")
        self.path = path
        self.proc = subprocess.Popen([sys.executable, "-m", "benchmarks.queries_http", "serve", "--workloads",
                                      str(workloads), "--seed", str(seed)], env=env, stdout=subprocess.PIPE,
                                     text=True)
        self.port = 0
        self.client: Any = None

    def wait_ready(self) -> None:
        import httpx

        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("READY "):
            raise RuntimeError(f"server {self.path} did not start (exit {self.proc.poll()})")
        self.port = int(line.split()[1])
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=600)

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.proc.pid)

    def post(self, query: str, variables: dict[str, Any] | None) -> tuple[float, bytes]:
        t0 = time.perf_counter()
        response = self.client.post("/graphql", json={"query": query, "variables": variables or {}})
        elapsed = time.perf_counter() - t0
        if response.status_code != 200 or b'"errors"' in response.content[:20]:
            raise RuntimeError(f"HTTP {response.status_code}: {response.text[:300]}")
        return elapsed, response.content

    def stop(self) -> None:
        if self.client is not None:
            self.client.close()
        self.proc.terminate()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _loop(servers: list[Server], requests: Any, *, max_count: int, max_seconds: float) -> dict[str, Any]:
    """Alternate ``requests`` (``(query, variables-or-callable)`` per step) over ``servers``."""
    samples: list[list[float]] = [[] for _ in servers]
    cpu0 = [s.cpu_seconds() for s in servers]
    mismatches = 0
    start = time.perf_counter()
    for i in range(max_count):
        query, variables, after = requests(i)
        order = list(range(len(servers))) if i % 2 == 0 else list(reversed(range(len(servers))))
        bodies: dict[int, bytes] = {}
        for k in order:
            elapsed, bodies[k] = servers[k].post(query, variables)
            samples[k].append(elapsed * 1000)
        mismatches += sum(1 for k in bodies if bodies[k] != bodies[0])
        after(bodies[0])
        if time.perf_counter() - start >= max_seconds:
            break
    return {"servers": [{"path": s.path, "ms": summarize(samples[k], "ms").to_dict(),
                         "server_cpu_s": round(s.cpu_seconds() - cpu0[k], 2)} for k, s in enumerate(servers)],
            "mismatches": mismatches}


def measure(servers: list[Server], ids: list[tuple[str | None, str, str, str]], *, max_count: int,
            max_seconds: float, seed: int = 11) -> dict[str, Any]:
    """Every figure (module doc) for servers already ready."""
    rng = random.Random(seed)
    cursor: dict[str, str | None] = {"after": None}

    def one(_: int) -> tuple[str, dict[str, Any], Any]:
        ns, group, kind, name = ids[rng.randrange(len(ids))]
        return ONE, {"ns": ns, "group": group, "kind": kind, "name": name}, lambda body: None

    def page(_: int) -> tuple[str, dict[str, Any], Any]:
        def after(body: bytes) -> None:
            info = json.loads(body)["data"]["workloads"]["pageInfo"]
            cursor["after"] = info["endCursor"] if info["hasNextPage"] else None
        return PAGE, {"after": cursor["after"]}, after

    def summary(_: int) -> tuple[str, None, Any]:
        return GPU_SUMMARY, None, lambda body: None

    for warm in range(3):  # first requests fill the parser and validation caches
        for fn in (one, summary):
            query, variables, _after = fn(warm)
            for s in servers:
                s.post(query, variables)
    return {"one_workload": _loop(servers, one, max_count=max_count, max_seconds=max_seconds),
            "page_of_100": _loop(servers, page, max_count=max(3, max_count // 2), max_seconds=max_seconds),
            "gpu_summary": _loop(servers, summary, max_count=max_count, max_seconds=max_seconds)}


def table(doc: dict[str, Any]) -> str:
    """The figures as a Markdown table: one row per figure and server."""
    rows = [f"{doc['workloads']} workloads, load average {' '.join(doc['loadavg_before'])} -> "
            f"{' '.join(doc['loadavg_after'])}", "",
            "| figure | server | p50 ms | p99 ms | min ms | n | server CPU s | mismatches |", "|---|---|---|---|---|---|---|---|"]
    for name in ("one_workload", "page_of_100", "gpu_summary"):
        for s in doc[name]["servers"]:
            ms = s["ms"]
            rows.append(f"| {name} | {s['path']} | {ms['median']} | {ms['p99']} | {ms['min']} | {ms['n']} | "
                        f"{s['server_cpu_s']} | {doc[name]['mismatches']} |")
    return "\n".join(rows)


def _exit(signum: int, _frame: Any) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.queries_http")
    parser.add_argument("mode", nargs="?", default="measure", choices=("measure", "serve"))
    parser.add_argument("--workloads", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--server-path", action="append", default=None)
    parser.add_argument("--max-count", type=int, default=400)
    parser.add_argument("--max-seconds", type=float, default=120.0)
    args = parser.parse_args(argv)
    if args.mode == "serve":
        asyncio.run(_serve(args.workloads, args.seed))
        return
    from benchmarks.generator import generate

    signal.signal(signal.SIGTERM, _exit)  # a terminated measurement still stops its servers (finally below)
    ids = generate(args.workloads, seed=args.seed).identities()
    servers = [Server(path, args.workloads, args.seed) for path in args.server_path or ["-"]]
    try:
        t0 = time.perf_counter()
        for s in servers:
            s.wait_ready()
        ready = time.perf_counter() - t0
        load_before = Path("/proc/loadavg").read_text().split()[:3]
        figures = measure(servers, ids, max_count=args.max_count, max_seconds=args.max_seconds)
        doc = {"workloads": args.workloads, "ready_s": round(ready, 1), "loadavg_before": load_before,
               "loadavg_after": Path("/proc/loadavg").read_text().split()[:3], **figures}
        print(json.dumps(doc))
        print(table(doc))
    finally:
        for s in servers:
            s.stop()


if __name__ == "__main__":
    main()
