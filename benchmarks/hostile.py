"""``python -m benchmarks.hostile``: /livez latency while the server is attacked.

Starts ``wmap serve`` over the bundled sample on 127.0.0.1 (a process of its own, default
limits) and probes ``/livez`` every 20 ms from another process while:

1. the fragment attack of issue 12 runs: 4 clients sending, in turn, the 40-level and
   20-level fragment bombs and a 30-level bomb of distinct aliases (refused by the cost
   check before validation);
2. 200 page queries (``workloads(first: 100)`` with roles and pods, a real portal page)
   are sent at once, in rounds.

Prints the load average first, then per phase p50/p99/max of the probes (target p99 <=
100 ms), the answers' status counts and the pages answered 200 per second.
Every loop is bounded in count and time (``--seconds`` per phase, default 10).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
import os
import select
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from tempfile import TemporaryDirectory

import httpx

from benchmarks.stats import percentile

REPO = Path(__file__).resolve().parent.parent
PAGE = "{ workloads(first: 100) { totalCount nodes { name phase roles { name pods { name phase node } } } } }"
TARGET_P99_MS = 100.0


def bombs() -> list[str]:
    """The fragment attacks: doubling spreads (40 and 20 levels) and a doubling tree."""
    def chain(levels: int) -> str:
        frags = ["fragment F0 on Query { definitions { name } }"]
        frags += [f"fragment F{i} on Query {{ ...F{i - 1} ...F{i - 1} }}" for i in range(1, levels + 1)]
        return f"query {{ ...F{levels} }} " + " ".join(frags)

    tree = ["fragment C0 on Component { name }"]
    tree += [f"fragment C{i} on Component {{ a: children {{ ...C{i - 1} }} b: children {{ ...C{i - 1} }} }}"
             for i in range(1, 31)]
    query = ('{ workload(namespace: "ml-training", group: "jobset.x-k8s.io", kind: "JobSet", name: "llm-pretrain") '
             "{ components { ...C30 } } } " + " ".join(tree))
    return [chain(40), chain(20), query]


@contextlib.contextmanager
def served(flags: list[str]) -> Iterator[str]:
    """``wmap serve --snapshot server/workload_map/sample`` on a free port; yields the base URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with TemporaryDirectory(prefix="wmap-bench-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("WMAP_")}
        env["KUBECONFIG"] = str(Path(tmp) / "none")
        command = [sys.executable, "-m", "workload_map", "serve", "--port", str(port), "--snapshot",
                   str(REPO / "server" / "workload_map" / "sample"), "--state-dir", str(Path(tmp) / "state"), "--log-level",
                   "WARNING", *flags]
        process = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                        break
                time.sleep(0.2)
            else:
                raise RuntimeError("the server did not become ready within 60 s")
            yield base
        finally:
            process.terminate()
            process.wait(10)


def probe_loop(base: str, limit_s: float) -> list[float]:
    """GET /livez every 20 ms on a fresh connection until stdin closes (or ``limit_s``); ms.

    Runs in a process of its own (``--probe``): the attacking clients' event loop would
    otherwise delay the probe's own reads and inflate the figures.
    """
    host, port = base.removeprefix("http://").split(":")
    samples: list[float] = []
    deadline = time.monotonic() + limit_s
    print("ready", flush=True)
    while time.monotonic() < deadline and len(samples) < 5000:
        if samples and select.select([sys.stdin], [], [], 0)[0] and not sys.stdin.read(1):
            break  # the parent closed stdin: the phase is over (after one sample at least)
        started = time.perf_counter()
        connection = http.client.HTTPConnection(host, int(port), timeout=30)
        try:
            connection.request("GET", "/livez")
            if connection.getresponse().status == 200:
                samples.append((time.perf_counter() - started) * 1000)
        except OSError:
            pass
        finally:
            connection.close()
        time.sleep(0.02)
    return samples


async def under(base: str, seconds: float, attack: Callable[[httpx.AsyncClient, float], Awaitable[Counter[int]]]
                ) -> tuple[list[float], Counter[int]]:
    """Probe /livez from another process while ``attack`` runs for ``seconds``."""
    prober = subprocess.Popen([sys.executable, "-m", "benchmarks.hostile", "--probe", base,
                               "--seconds", str(seconds * 4 + 60)], cwd=REPO, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    limits = httpx.Limits(max_connections=256, max_keepalive_connections=0)
    assert prober.stdout is not None
    await asyncio.to_thread(prober.stdout.readline)  # "ready": the probe process has started
    try:
        async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as client:
            statuses = await attack(client, time.monotonic() + seconds)
    finally:
        out, _ = prober.communicate(timeout=60)  # closes its stdin: it stops
    return [float(x) for x in json.loads(out or "[]")], statuses


async def fragment_attack(client: httpx.AsyncClient, until: float) -> Counter[int]:
    """4 clients sending the bombs in turn until ``until`` (at most 2,000 requests)."""
    statuses: Counter[int] = Counter()
    documents = bombs()

    async def one(worker: int) -> None:
        for index in range(500):
            if time.monotonic() >= until:
                return
            response = await client.post("/graphql", json={"query": documents[(worker + index) % len(documents)]})
            statuses[response.status_code] += 1

    await asyncio.gather(*(one(w) for w in range(4)))
    return statuses


async def page_storm(client: httpx.AsyncClient, until: float) -> Counter[int]:
    """Rounds of 200 simultaneous page queries until ``until`` (at most 10 rounds).

    ``statuses[-1]`` is the storm's length in ms (for the pages/s figure).
    """
    statuses: Counter[int] = Counter()
    started = time.monotonic()
    for _ in range(10):
        if time.monotonic() >= until:
            break
        answers = await asyncio.gather(*(client.post("/graphql", json={"query": PAGE}) for _ in range(200)))
        statuses.update(r.status_code for r in answers)
    statuses[-1] = round((time.monotonic() - started) * 1000)
    return statuses


def report(name: str, samples: list[float], statuses: Counter[int]) -> str:
    """One printed line: probe percentiles, target verdict, answer statuses (and pages/s)."""
    if not samples:
        return f"{name}: no /livez answer"
    p99 = percentile(samples, 99)
    verdict = "met" if p99 <= TARGET_P99_MS else "MISSED"
    elapsed_ms = statuses.pop(-1, 0)
    rate = f"  pages answered 200: {statuses[200] / (elapsed_ms / 1000):.1f}/s" if elapsed_ms else ""
    return (f"{name:<28} /livez n={len(samples):<4} p50={percentile(samples, 50):7.1f} ms  p99={p99:7.1f} ms  "
            f"max={max(samples):7.1f} ms  target p99<={TARGET_P99_MS:g} ms {verdict}  answers={dict(statuses)}{rate}")


def main(argv: list[str] | None = None) -> int:
    """Run both phases and print the figures."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.hostile", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=10.0, help="length of each phase (default 10)")
    p.add_argument("--serve-flag", action="append", default=[], help="extra wmap serve flag (repeatable), e.g. "
                                                                    "--serve-flag=--max-expensive-requests=1")
    p.add_argument("--probe", metavar="URL", help=argparse.SUPPRESS)  # the probe process (see probe_loop)
    args = p.parse_args(argv)
    if args.probe:
        print(json.dumps([round(x, 3) for x in probe_loop(args.probe, args.seconds)]))
        return 0
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)", flush=True)
    with served(args.serve_flag) as base:
        for name, attack in (("fragment attack", fragment_attack), ("200 concurrent page queries", page_storm)):
            samples, statuses = asyncio.run(under(base, args.seconds, attack))
            print(report(name, samples, statuses), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
