"""``python -m benchmarks.ui_poll``: /livez latency while web pages (/ui) poll the server.

Starts ``wmap serve`` over the bundled sample on 127.0.0.1 (``benchmarks.hostile.served``)
and probes ``/livez`` every 20 ms from another process (``benchmarks.hostile --probe``)
while simulated pages send exactly what the page's views send (their query texts are read
from ``server/workload_map/api/static/js/``):

* the workload list: ``GET /api/v1/workloads?limit=100`` and the filter options query;
* the seed JobSet's page: the workload page's GraphQL query;
* the GPU page: its five ``gpuSummary`` groupings.

Phases: idle; ``--pages`` pages (default 10) each refreshing once a second (what a page
does at most while changes stream in: one refresh per burst, 300 ms debounce); the same
pages refreshing back to back (worst case). Prints p50/p99/max of the probes (target p99
<= 100 ms, as benchmarks.hostile) and the page refreshes answered per second. Every loop
is bounded in count and time (``--seconds`` per phase, default 10).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable

import httpx

from benchmarks.hostile import REPO, served, under, report

STATIC = REPO / "server" / "workload_map" / "api" / "static" / "js"
MAX_REFRESHES = 5000
"""Most refreshes one phase sends (with the time bound, whichever comes first)."""


def page_query(module: str, name: str) -> str:
    """The GraphQL text a view module exports as ``name`` (with its ``${...}`` fragments expanded)."""
    text = (STATIC / module).read_text(encoding="utf-8")
    constants = dict(re.findall(r'const (\w+) = "([^"]*)";', text))
    template = re.search(rf"{name} = `([^`]*)`", text)
    if template is None:
        raise RuntimeError(f"{module} exports no {name}")
    return re.sub(r"\$\{(\w+)\}", lambda m: constants[m[1]], template[1])


def refreshes(pages: int, period_s: float) -> Callable[[httpx.AsyncClient, float], Awaitable[Counter[int]]]:
    """``pages`` pages, each refreshing list + workload + GPU views every ``period_s`` (0: back to back)."""
    workload = page_query("workload.js", "QUERY")
    gpus = page_query("gpus.js", "QUERY")
    options = page_query("workloads.js", "OPTIONS")
    seed = {"namespace": "ml-training", "group": "jobset.x-k8s.io", "kind": "JobSet", "name": "llm-pretrain"}

    async def run(client: httpx.AsyncClient, until: float) -> Counter[int]:
        statuses: Counter[int] = Counter()
        started = time.monotonic()
        sent = 0

        async def page() -> None:
            nonlocal sent
            while time.monotonic() < until and sent < MAX_REFRESHES:
                sent += 1
                begun = time.monotonic()
                answers = await asyncio.gather(
                    client.get("/api/v1/workloads", params={"limit": 100}),
                    client.post("/graphql", json={"query": options}),
                    client.post("/graphql", json={"query": workload, "variables": seed}),
                    client.post("/graphql", json={"query": gpus}))
                statuses.update(r.status_code for r in answers)
                await asyncio.sleep(max(0.0, period_s - (time.monotonic() - begun)))

        await asyncio.gather(*(page() for _ in range(pages)))
        statuses[-1] = round((time.monotonic() - started) * 1000)
        statuses[-2] = sent
        return statuses

    return run


async def idle(client: httpx.AsyncClient, until: float) -> Counter[int]:
    """No page open."""
    await asyncio.sleep(max(0.0, until - time.monotonic()))
    return Counter()


def main(argv: list[str] | None = None) -> int:
    """Run the three phases and print the figures."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.ui_poll", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=10.0, help="length of each phase (default 10)")
    p.add_argument("--pages", type=int, default=10, help="pages open at once (default 10)")
    args = p.parse_args(argv)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)", flush=True)
    phases = (("idle", idle), (f"{args.pages} pages, 1 refresh/s", refreshes(args.pages, 1.0)),
              (f"{args.pages} pages, back to back", refreshes(args.pages, 0.0)))
    with served([]) as base:
        for name, load in phases:
            samples, statuses = asyncio.run(under(base, args.seconds, load))
            sent = statuses.pop(-2, 0)
            elapsed = statuses.get(-1, 0) / 1000
            line = report(name, samples, statuses).replace("pages answered 200", "requests answered 200")
            print(line + (f"  refreshes (4 requests each): {sent / elapsed:.1f}/s" if sent and elapsed else ""),
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
