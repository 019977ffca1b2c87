"""``python -m benchmarks.hostile``: /livez latency while the server is attacked.

Starts ``wmap serve`` over the bundled sample on 127.0.0.1 (a process of its own, default
limits) and probes ``/livez`` every 20 ms while:

1. the fragment attack of issue 12 runs: 4 clients sending, in turn, the 40-level and
   20-level fragment bombs and a 30-level bomb of distinct aliases (refused by the cost
   check before validation);
2. 200 page queries (``workloads(first: 100)`` with roles and pods) are sent at once, in
   rounds.

Prints p50/p99/max of the probes (target p99 <= 100 ms) and the answers' status counts.
Every loop is bounded in count and time (``--seconds`` per phase, default 10).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
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
    """``wmap serve --snapshot server/sample`` on a free port; yields the base URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with TemporaryDirectory(prefix="wmap-bench-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("WMAP_")}
        env["KUBECONFIG"] = str(Path(tmp) / "none")
        command = [sys.executable, "-m", "server", "serve", "--port", str(port), "--snapshot",
                   str(REPO / "server" / "sample"), "--state-dir", str(Path(tmp) / "state"), "--log-level",
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


async def probe(base: str, stop: asyncio.Event, samples: list[float]) -> None:
    """GET /livez every 20 ms on a fresh connection until ``stop``; latencies in ms."""
    async with httpx.AsyncClient(base_url=base, timeout=30, limits=httpx.Limits(max_keepalive_connections=0)) as c:
        while not stop.is_set() and len(samples) < 5000:
            started = time.perf_counter()
            response = await c.get("/livez")
            if response.status_code == 200:
                samples.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(0.02)


async def under(base: str, seconds: float, attack: Callable[[httpx.AsyncClient, float], Awaitable[Counter[int]]]
                ) -> tuple[list[float], Counter[int]]:
    """Probe /livez while ``attack`` runs for ``seconds``."""
    stop, samples = asyncio.Event(), []
    prober = asyncio.create_task(probe(base, stop, samples))
    limits = httpx.Limits(max_connections=256, max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as client:
        statuses = await attack(client, time.monotonic() + seconds)
    stop.set()
    await prober
    return samples, statuses


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
    """Rounds of 200 simultaneous page queries until ``until`` (at most 10 rounds)."""
    statuses: Counter[int] = Counter()
    for _ in range(10):
        if time.monotonic() >= until:
            break
        answers = await asyncio.gather(*(client.post("/graphql", json={"query": PAGE}) for _ in range(200)))
        statuses.update(r.status_code for r in answers)
    return statuses


def report(name: str, samples: list[float], statuses: Counter[int]) -> str:
    """One printed line: probe percentiles, target verdict, answer statuses."""
    if not samples:
        return f"{name}: no /livez answer"
    p99 = percentile(samples, 99)
    verdict = "met" if p99 <= TARGET_P99_MS else "MISSED"
    return (f"{name:<28} /livez n={len(samples):<4} p50={percentile(samples, 50):7.1f} ms  p99={p99:7.1f} ms  "
            f"max={max(samples):7.1f} ms  target p99<={TARGET_P99_MS:g} ms {verdict}  answers={dict(statuses)}")


def main(argv: list[str] | None = None) -> int:
    """Run both phases and print the figures."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.hostile", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=10.0, help="length of each phase (default 10)")
    p.add_argument("--serve-flag", action="append", default=[], help="extra wmap serve flag (repeatable), e.g. "
                                                                    "--serve-flag=--max-expensive-requests=1")
    args = p.parse_args(argv)
    with served(args.serve_flag) as base:
        for name, attack in (("fragment attack", fragment_attack), ("200 concurrent page queries", page_storm)):
            samples, statuses = asyncio.run(under(base, args.seconds, attack))
            print(report(name, samples, statuses), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
