"""``python -m benchmarks.memory``: RSS per pod and per workload beside the issue-17 targets.

Runs ``benchmarks.memory_live`` children (live path through the test control plane, then
the snapshot path in process) and prints one table; the JSON (every phase of every child,
heap and GC figures, tracemalloc's top files) goes to ``--output``.

Targets (issue 17; benchmark figures, not tests):

- live: RSS after ready at 20,000 pods <= 250 MB above the idle server (same process,
  same app, empty cluster);
- growth: RSS per added pod <= 4 KB from 20,000 to 100,000 pods (the snapshot path: the
  same ``Store``/``ObjectGraph`` code in process; the test API server is not loaded with
  100,000 pods);
- views: the views of 20,000 workloads <= 100 MB, from the main-process RSS growth
  ``ready - synced`` (views, ViewStore indexes, materializer book-keeping) per workload,
  times 20,000.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from benchmarks import machine
from benchmarks.memory_live import by_phase, live, snapshot

TARGET_LIVE_MB = 250.0
TARGET_GROWTH_KB = 4.0
TARGET_VIEWS_MB = 100.0
VIEW_WORKLOADS = 20_000
KB = 1024


def _row(path: str, step: dict[str, Any], base_mb: float) -> dict[str, Any]:
    counts = step["counts"]
    ready, synced = by_phase(step, "ready"), by_phase(step, "synced")
    above = ready["rss_mb"] - base_mb
    views_mb = ready["rss_mb"] - synced["rss_mb"]
    return {"path": path, "pods": counts["pods"], "objects": counts["objects"], "workloads": counts["workloads"],
            "rss_synced_mb": synced["rss_mb"], "rss_ready_mb": ready["rss_mb"], "above_idle_mb": round(above, 1),
            "kb_per_pod": round(above * 1024 / max(1, counts["pods"]), 2),
            "kb_per_workload": round(above * 1024 / max(1, counts["workloads"]), 1),
            "views_kb_per_workload": round(views_mb * 1024 / max(1, counts["workloads"]), 2),
            "workers_rss_mb": ready["workers_rss_mb"], "ready_s": ready.get("seconds")}


def summarize(doc: dict[str, Any]) -> dict[str, Any]:
    """Rows per path and size, and each target with the figure it is judged by."""
    rows: list[dict[str, Any]] = []
    if "live" in doc:
        idle = by_phase(doc["live"]["idle"], "ready")["rss_mb"]
        rows += [_row("live", s, idle) for s in doc["live"]["steps"]]
    if "snapshot" in doc:
        base = by_phase(doc["snapshot"]["steps"][0], "imported")["rss_mb"]
        rows += [_row("snapshot", s, base) for s in doc["snapshot"]["steps"]]
    targets: list[dict[str, Any]] = []
    live_rows = [r for r in rows if r["path"] == "live"]
    if live_rows:
        top = max(live_rows, key=lambda r: r["pods"])
        targets.append({"target": f"live RSS above idle at {top['pods']} pods", "figure_mb": top["above_idle_mb"],
                        "limit_mb": TARGET_LIVE_MB, "met": top["above_idle_mb"] <= TARGET_LIVE_MB})
    snap = sorted((r for r in rows if r["path"] == "snapshot"), key=lambda r: r["pods"])
    if len(snap) >= 2:
        lo, hi = snap[0], snap[-1]
        growth = (hi["rss_ready_mb"] - lo["rss_ready_mb"]) * 1024 / max(1, hi["pods"] - lo["pods"])
        targets.append({"target": f"RSS growth per pod, {lo['pods']} -> {hi['pods']} pods (snapshot path)",
                        "figure_kb": round(growth, 2), "limit_kb": TARGET_GROWTH_KB,
                        "met": growth <= TARGET_GROWTH_KB})
    if rows:
        per_view = max(r["views_kb_per_workload"] for r in rows if r["workloads"] >= 1000) \
            if any(r["workloads"] >= 1000 for r in rows) else max(r["views_kb_per_workload"] for r in rows)
        views_mb = per_view * VIEW_WORKLOADS / 1024
        targets.append({"target": f"views of {VIEW_WORKLOADS} workloads (largest per-workload figure x {VIEW_WORKLOADS})",
                        "figure_mb": round(views_mb, 1), "limit_mb": TARGET_VIEWS_MB, "met": views_mb <= TARGET_VIEWS_MB})
    return {"rows": rows, "targets": targets}


def table(summary: dict[str, Any]) -> str:
    """The printed table."""
    head = (f"{'path':9}{'pods':>8}{'objects':>9}{'wl':>7}{'synced MB':>11}{'ready MB':>10}{'above MB':>10}"
            f"{'KB/pod':>8}{'KB/wl':>8}{'views KB/wl':>12}{'ready s':>9}")
    lines = [head]
    for r in summary["rows"]:
        lines.append(f"{r['path']:9}{r['pods']:>8}{r['objects']:>9}{r['workloads']:>7}{r['rss_synced_mb']:>11}"
                     f"{r['rss_ready_mb']:>10}{r['above_idle_mb']:>10}{r['kb_per_pod']:>8}{r['kb_per_workload']:>8}"
                     f"{r['views_kb_per_workload']:>12}{r['ready_s']!s:>9}")
    lines.append("targets:")
    for t in summary["targets"]:
        unit = "kb" if "figure_kb" in t else "mb"
        lines.append(f"  {t['target']}: {t['figure_' + unit]} {unit.upper()} (target <= {t['limit_' + unit]}) "
                     f"{'met' if t['met'] else 'MISSED'}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Entry point of ``python -m benchmarks.memory``."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.memory", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--live-pods", default="10000,20000", help="pods loaded through the API, per step")
    p.add_argument("--snapshot-workloads", default="2000,10000", help="snapshot-path sizes in workloads")
    p.add_argument("--skip-live", action="store_true")
    p.add_argument("--no-trace", action="store_true", help="skip the tracemalloc child")
    p.add_argument("--output", type=Path, default=Path(__file__).resolve().parent / "results" / "memory.json")
    args = p.parse_args(argv)
    doc: dict[str, Any] = {"machine": machine.describe()}
    if not args.skip_live:
        print("live path (test control plane):", flush=True)
        doc["live"] = live([int(x) for x in args.live_pods.split(",")], trace=not args.no_trace)
    print("snapshot path (in process):", flush=True)
    doc["snapshot"] = snapshot([int(x) for x in args.snapshot_workloads.split(",")])
    doc["summary"] = summarize(doc)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(doc, indent=1))
    print(table(doc["summary"]))
    print(f"(JSON with every phase: {args.output})")
