"""``/metrics`` carries the process, platform and build series (scraped over HTTP, parsed
with prometheus_client's own text parser)."""

from __future__ import annotations

import os
import platform
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

import workload_map


async def scrape(client: httpx.AsyncClient) -> dict[str, list]:
    reply = await client.get("/metrics")
    assert reply.status_code == 200
    return {family.name: family.samples for family in text_string_to_metric_families(reply.text)}


def rss_now() -> int:
    """This process's resident set size from /proc/self/statm (pages x page size)."""
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def test_build_info_names_version_and_python(client: httpx.AsyncClient) -> None:
    (sample,) = (await scrape(client))["wmap_build_info"]
    assert sample.name == "wmap_build_info" and sample.value == 1.0
    assert sample.labels == {"version": workload_map.__version__, "python": platform.python_version()}


async def test_process_and_platform_series_describe_this_process(client: httpx.AsyncClient) -> None:
    families = await scrape(client)
    (info,) = families["python_info"]
    assert info.labels["implementation"] == platform.python_implementation()
    assert "python_gc_collections" in families
    if not Path("/proc/self/stat").exists():  # the process collector reads /proc (Linux only)
        return
    # the ASGI app runs in this test process: its RSS is the one /proc reports here, within
    # the growth of one scrape (between 0.5x and 2x allows for allocation in between)
    (rss,) = families["process_resident_memory_bytes"]
    assert 0.5 * rss_now() <= rss.value <= 2 * rss_now()
    (fds,) = families["process_open_fds"]
    assert fds.value >= 3  # stdin, stdout, stderr at least
    (cpu,) = families["process_cpu_seconds"]
    assert cpu.value > 0

