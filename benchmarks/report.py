"""Targets, the printed table and the JSON document."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class Target:
    """One target: which figure, the bound and the direction."""

    key: str
    label: str
    bound: float
    unit: str
    higher_is_better: bool = False

    def met(self, value: float | None) -> bool | None:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return None
        return value >= self.bound if self.higher_is_better else value <= self.bound

    def text(self) -> str:
        op = ">=" if self.higher_is_better else "<="
        return f"{op} {self.bound:g} {self.unit}"


TARGETS = {
    "one_workload_p99": Target("one_workload_p99", "one-workload query p99", 5, "ms"),
    "page_of_100_p99": Target("page_of_100_p99", "page of 100 p99", 50, "ms"),
    "gpu_summary_20k": Target("gpu_summary_20k", "gpuSummary over 20,000 workloads, warm (p99)", 20, "ms"),
    "cold_resolution": Target("cold_resolution", "cold resolution, one core (median)", 5000, "workloads/s",
                              higher_is_better=True),
    "bytes_per_pod": Target("bytes_per_pod", "bytes per cached pod", 2048, "B"),
    "initial_sync_ratio": Target("initial_sync_ratio", "initial sync / list floor (medians)", 1.5, "x"),
    "update_to_phase_p99": Target("update_to_phase_p99", "update-to-phase p99", 100, "ms"),
}


def _fmt(value: Any, unit: str = "") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, (int, float)):
        if unit in ("ms", "s", "x") and abs(value) < 1000:
            text = f"{value:.3g}" if abs(value) >= 1 else f"{value:.2g}"
            if "e" in text:
                text = f"{value:.1f}"
        else:
            text = f"{value:,.0f}"
        return f"{text} {unit}".strip()
    return str(value)


class Table:
    """Rows of ``figure | size | median | p99 | n | target | met``."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str, str, str, str, str]] = []
        self.verdicts: list[dict[str, Any]] = []

    def add(self, figure: str, size: str, median: Any, p99: Any = None, n: Any = None, unit: str = "",
            target: Target | None = None, judged: Any = None) -> None:
        verdict = ""
        if target is not None:
            ok = target.met(judged)
            verdict = "n/a" if ok is None else ("met" if ok else "NOT met")
            self.verdicts.append({"target": target.label, "size": size, "bound": target.text(),
                                  "value": judged, "met": ok})
        self.rows.append((figure, size, _fmt(median, unit), _fmt(p99, unit), "" if n is None else str(n),
                          target.text() if target else "", verdict))

    def render(self) -> str:
        head = ("figure", "size", "median", "p99", "n", "target", "met")
        widths = [max(len(str(r[i])) for r in [head, *self.rows]) for i in range(len(head))]
        line = "  ".join("-" * w for w in widths)
        out = ["  ".join(str(h).ljust(w) for h, w in zip(head, widths)), line]
        for r in self.rows:
            out.append("  ".join(str(c).ljust(w) if i in (0, 1, 5, 6) else str(c).rjust(w)
                                 for i, (c, w) in enumerate(zip(r, widths))))
        return "\n".join(out)


def build_table(doc: dict[str, Any]) -> Table:
    """The printed table from the JSON document."""
    t = Table()
    res = doc.get("resolution")
    if res:
        fast = res["with_fast_path"]
        sample = f"sample {res['sample_workloads']}"
        t.add("cold resolution, resolver only (1 core)", sample, fast["workloads_per_s"]["median"],
              fast["workloads_per_s"]["p99"], fast["batches"], "wl/s", TARGETS["cold_resolution"],
              fast["workloads_per_s"]["median"])
        t.add("  same, pods through the resolver", sample, fast["pods_per_s"]["median"], fast["pods_per_s"]["p99"],
              fast["batches"], "pods/s")
        slow = res["without_fast_path"]
        t.add("  same, fast path disabled", sample, slow["workloads_per_s"]["median"], slow["workloads_per_s"]["p99"],
              slow["batches"], "wl/s")
        t.add("  fast-path speedup (medians)", sample, res["fast_path_speedup"], None, None, "x")
        share = res["jq_share"]
        t.add("  time in workload_map.jq (rest: Python)", sample, share["jq_pct"], None, share["jq_evaluations"], "%")
        bd = share["jq_breakdown_pct"]
        t.add("    C jq / JSON for jq / fast path", sample,
              f"{bd['c_jq_program']}% / {bd['json_serialization_for_jq']}% / {bd['fast_path_python']}%")
    for size, figs in (doc.get("sizes") or {}).items():
        q = figs.get("queries") or {}
        if not q:
            continue
        cold = q["cold_service_pass"]
        t.add("cold service pass (list+resolve all)", size, cold["workloads_per_s"], None, cold["workloads"], "wl/s")
        for key, label, target in (("one_workload_ms", "warm: one workload (GraphQL)", "one_workload_p99"),
                                   ("page_of_100_ms", "warm: page of 100 (GraphQL)", "page_of_100_p99"),
                                   ("gpu_summary_ms", "warm: gpuSummary, all workloads", None)):
            fig = q[key]
            tgt = TARGETS[target] if target else (TARGETS["gpu_summary_20k"] if int(size) >= 20000 else None)
            t.add(label, size, fig["median"], fig["p99"], fig["n"], "ms", tgt, fig["p99"])
    mem = doc.get("memory")
    if mem:
        size = str(mem["workloads"])
        t.add("bytes per cached pod (tracemalloc)", size, mem["bytes_per_pod"], None, mem["pods"], "B",
              TARGETS["bytes_per_pod"], mem["bytes_per_pod"])
        t.add("bytes per workload, own objects", size, mem["bytes_per_workload_objects"], None, mem["workloads"], "B")
        t.add("bytes per workload, objects + pods", size, mem["bytes_per_workload_total"], None, mem["workloads"],
              "B")
        t.add("bytes per memoized view", size, mem["bytes_per_memoized_view"], None, mem["views"], "B")
    cl_sync = ((doc.get("cluster") or {}).get("initial_sync") or {})
    if cl_sync.get("informer_bytes_per_pod_rss"):
        t.add("RSS high-water per pod, informer sync", str(cl_sync.get("pods_cached")),
              cl_sync["informer_bytes_per_pod_rss"], None, 1, "B")
    cl = doc.get("cluster")
    if cl and not cl.get("skipped"):
        sync = cl.get("initial_sync") or {}
        pods = str(sync.get("pods_listed", ""))
        if sync:
            t.add("list floor, raw paginated HTTPS list", pods, sync["list_floor_s"]["median"],
                  sync["list_floor_s"]["p99"], sync["list_floor_s"]["n"], "s")
            t.add("InformerCache initial sync", pods, sync["informer_sync_s"]["median"],
                  sync["informer_sync_s"]["p99"], sync["informer_sync_s"]["n"], "s")
            t.add("  initial sync / list floor", pods, sync["ratio_median"], sync["ratio_p99"], None, "x",
                  TARGETS["initial_sync_ratio"], sync["ratio_median"])
        upd = cl.get("update_to_phase") or {}
        if upd.get("update_to_graphql_ms"):
            rate = upd.get("achieved_rate_per_s")
            fig = upd["update_to_graphql_ms"]
            t.add(f"update -> phase via GraphQL @{rate}/s", pods, fig["median"], fig["p99"], fig["n"], "ms",
                  TARGETS["update_to_phase_p99"], fig["p99"])
            low = upd.get("baseline_low_rate") or {}
            if low.get("update_to_graphql_ms"):
                f = low["update_to_graphql_ms"]
                t.add(f"  same @{low.get('achieved_rate_per_s')}/s (baseline)", pods, f["median"], f["p99"], f["n"], "ms")
            for key, label in (("update_to_subscriber_ms", "  update -> change-feed subscriber"),
                               ("update_to_cache_applied_ms", "  update -> applied in the cache"),
                               ("cache_applied_to_dequeued_ms", "  applied -> dequeued (loop backlog)"),
                               ("cache_applied_to_subscriber_ms", "  applied -> change-feed subscriber"),
                               ("subscriber_to_graphql_answer_ms", "  feed event -> GraphQL answer")):
                f = upd.get(key) or {}
                if not f.get("n"):
                    continue
                t.add(label, pods, f["median"], f["p99"], f["n"], "ms")
    return t


def write_json(doc: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2, sort_keys=False, default=str) + "\n", encoding="utf-8")
