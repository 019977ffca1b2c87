"""cProfile summaries: the hottest functions by own time and by cumulative time."""

from __future__ import annotations

import cProfile
import pstats
from typing import Any


def short(path: str) -> str:
    """``server/workload_map/kube/store.py`` rather than the absolute path."""
    for marker in ("/server/", "/schema/", "/benchmarks/", "/site-packages/", "/lib/python"):
        if marker in path:
            return path[path.index(marker) + 1:]
    return path


PACKAGES: tuple[tuple[str, str], ...] = (
    ("/server/jq/", "workload_map.jq (jq engine)"), ("/server/resolution/", "workload_map.resolution"),
    ("/server/kube/", "workload_map.kube (cache, informers)"), ("/server/", "server (service, api, other)"),
    ("/schema/", "schema (GraphQL types)"), ("/graphql/", "graphql-core"), ("/strawberry/", "strawberry"),
    ("/starlette/", "starlette + httpx ASGI"), ("/httpx/", "starlette + httpx ASGI"),
    ("/httpcore/", "starlette + httpx ASGI"), ("/aiohttp/", "aiohttp + kubernetes_asyncio"),
    ("/kubernetes_asyncio/", "aiohttp + kubernetes_asyncio"), ("/json/", "json (stdlib)"),
    ("/asyncio/", "asyncio"), ("/selectors.py", "asyncio"), ("/typing.py", "typing/abc isinstance"),
    ("/abc.py", "typing/abc isinstance"), ("/decimal.py", "decimal"), ("/cachetools/", "cachetools"),
)


def package_of(file: str, func: str) -> str:
    """A coarse owner of a profiled function (C builtins are grouped apart)."""
    if file == "~":
        if "epoll" in func or "select" in func:
            return "idle (event loop wait)"
        if "json" in func or "raw_decode" in func:
            return "json (stdlib)"
        return "builtins (C, called from anywhere)"
    if file == "<string>":
        return "dataclass dunders (e.g. GVK __lt__/__eq__/__hash__)"
    for marker, name in PACKAGES:
        if marker in file:
            return name
    return "other"


def summary(profile: cProfile.Profile, *, top: int = 12, cumulative_filter: tuple[str, ...] = ("/server/",)
            ) -> dict[str, Any]:
    """Own time by package, top functions by own time, project functions by cumulative time."""
    stats = pstats.Stats(profile)
    total = stats.total_tt or 1.0  # type: ignore[attr-defined]
    items = list(stats.stats.items())  # type: ignore[attr-defined]
    own = sorted(items, key=lambda kv: -kv[1][2])[:top]
    # project frames by cumulative time, without the pure wrappers (middleware, execute) at ~100%
    cum = [kv for kv in sorted(items, key=lambda kv: -kv[1][3])
           if any(f in kv[0][0] for f in cumulative_filter) and kv[1][3] / total < 0.95]
    packages: dict[str, float] = {}
    for (file, _, func), v in items:
        key = package_of(file, func)
        packages[key] = packages.get(key, 0.0) + v[2]
    return {
        "total_s": round(total, 3),
        "own_time_by_package_pct": {k: round(100 * v / total, 1)
                                    for k, v in sorted(packages.items(), key=lambda kv: -kv[1]) if v / total >= 0.005},
        "by_own_time": [{"function": f"{short(f)}:{ln}({fn})", "calls": v[1], "own_pct": round(100 * v[2] / total, 1)}
                        for (f, ln, fn), v in own],
        "by_cumulative_time": [{"function": f"{short(f)}:{ln}({fn})", "calls": v[1],
                                "cum_pct": round(100 * v[3] / total, 1)} for (f, ln, fn), v in cum[:top]],
    }
