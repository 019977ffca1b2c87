"""The rows of ``python -m benchmarks.targets``: each issue-23 target, where its figure is, the table.

A :class:`Row` names the figure (``benchmarks.target_figures``), a function reading the
judged value out of that figure's result, the bound and its direction, and the size the
figure ran at. A value that is missing (figure skipped, failed, or not produced) is
shown as ``-`` and judged ``n/a``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Figures = dict[str, Any]


def _get(doc: Figures, *path: str) -> Any:
    value: Any = doc
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _scaled(factor: float, *path: str) -> Callable[[Figures], float | None]:
    def read(doc: Figures) -> float | None:
        value = _get(doc, *path)
        return None if value is None else float(value) * factor
    return read


@dataclass(frozen=True, slots=True)
class Row:
    """One target: ``figure`` (child figure name), ``value`` (judged number from its figures)."""

    target: str
    figure: str
    value: Callable[[Figures], float | None]
    bound: float
    unit: str
    size: Callable[[dict[str, Any]], str]
    higher_is_better: bool = False

    def met(self, value: float | None) -> bool | None:
        if value is None or math.isnan(value):
            return None
        return value >= self.bound if self.higher_is_better else value <= self.bound

    def bound_text(self) -> str:
        return f"{'>=' if self.higher_is_better else '<='} {self.bound:g} {self.unit}"


def _wl(key: str = "workloads") -> Callable[[dict[str, Any]], str]:
    return lambda p: f"{int(p[key]):,} workloads"


def _pods(p: dict[str, Any]) -> str:
    return f"{int(p['pods']):,} pods"


ROWS: tuple[Row, ...] = (
    Row("ready / parse floor, snapshot", "snapshot", _scaled(1, "ratio"), 1.5, "x", _wl()),
    Row("ready / raw list floor, live (pod informer)", "live", _scaled(1, "initial_sync", "ratio"), 1.5, "x", _pods),
    Row("cold resolution, 2 workers (lifespan start to every view)", "warm",
        _scaled(1, "cold_service_pass", "workloads_per_s"), 5000, "workloads/s", _wl(), higher_is_better=True),
    Row("/livez first answer after start (serve --snapshot)", "snapshot", _scaled(1, "first_livez_s"), 1, "s", _wl()),
    Row("/livez p99 until ready (serve --snapshot)", "snapshot", _scaled(1000, "livez_p99_s"), 50, "ms", _wl()),
    Row("warm page of 100 p99 (GraphQL, in process)", "warm", _scaled(1, "page_of_100_ms", "p99"), 30, "ms", _wl()),
    Row("warm gpuSummary p99", "warm", _scaled(1, "gpu_summary_ms", "p99"), 5, "ms", _wl()),
    Row("warm one workload p99", "warm", _scaled(1, "one_workload_ms", "p99"), 3, "ms", _wl()),
    Row("churn in process: change -> visible p99 (half unread)", "churn", _scaled(1, "p99_ms"), 100, "ms",
        lambda p: f"{int(p['workloads']):,} workloads, {int(p['rate']):,}/s"),
    Row("churn live: pod update -> change-feed subscriber p99, highest sustained rate", "live",
        _scaled(1, "update_to_phase", "at_sustained", "update_to_subscriber_ms", "p99"), 250, "ms",
        lambda p: f"{int(p['pods']):,} pods, of {'/'.join(f'{r:g}' for r in p['sweep'])}/s"),
    Row("relist after API server restart / raw list", "live", _scaled(1, "relist", "ratio"), 1.5, "x", _pods),
    Row("describe -f one small file, wall median", "cli", _scaled(1, "small_wall_median_s"), 0.08, "s",
        lambda p: "JobSet, 24 KB"),
    Row("describe -f big file, peak RSS", "cli_big", _scaled(1e-6, "big_peak_rss_bytes"), 250, "MB",
        _wl("big_workloads")),
)


def _fmt(value: float | None, unit: str) -> str:
    if value is None or math.isnan(value):
        return "-"
    if unit == "x":
        return f"{value:.2f} x"
    if abs(value) >= 100:
        return f"{value:,.0f} {unit}"
    return f"{value:.3g} {unit}"


def _side(fig: dict[str, Any], side: str, row: Row) -> tuple[float | None, str, str]:
    """(value, note, load) of one side of a figure."""
    got = fig.get(side)
    if fig.get("skipped"):
        return None, f"skipped: {fig['skipped']}", ""
    if not isinstance(got, dict):
        return None, "", ""
    load = got.get("load_end") or []
    load_text = f"{load[0]:.1f}" if load else ""
    if got.get("error"):
        return None, f"{side} failed: {got['error']}", load_text
    return row.value(got.get("figures") or {}), "", load_text


def verdicts(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """One dict per row: target, bound, size, before, after, met (of after), loads, notes."""
    out = []
    for row in ROWS:
        fig = doc["figures"].get(row.figure)
        if fig is None:
            out.append({"target": row.target, "bound": row.bound_text(), "size": "", "before": None,
                        "after": None, "met": None, "load_before": "", "load_after": "", "notes": ["not run"]})
            continue
        before, note_b, load_b = _side(fig, "before", row)
        after, note_a, load_a = _side(fig, "after", row)
        params = fig.get("params") or {}
        try:
            size = row.size(params)
        except (KeyError, TypeError, ValueError):
            size = ""
        notes = sorted({n for n in (note_b, note_a) if n})
        out.append({"target": row.target, "bound": row.bound_text(), "unit": row.unit, "size": size,
                    "before": before, "after": after, "met": row.met(after), "load_before": load_b,
                    "load_after": load_a, "notes": notes})
    return out


def render(doc: dict[str, Any]) -> str:
    """The table, with the machine, the sizes and the notes of failed or skipped figures."""
    m = doc["machine"]
    rows = doc.get("targets") or verdicts(doc)
    head = ("target", "bound", "size", "before", "after", "met?", "load b/a")
    body = [(r["target"], r["bound"], r["size"], _fmt(r["before"], r.get("unit", "")),
             _fmt(r["after"], r.get("unit", "")), "n/a" if r["met"] is None else ("met" if r["met"] else "NOT met"),
             f"{r['load_before'] or '-'} / {r['load_after'] or '-'}") for r in rows]
    widths = [max(len(x[i]) for x in (head, *body)) for i in range(len(head))]
    lines = [f"issue 23 targets  {m['date']}  {m['cpu_model']}, {m['cores']} cores, Python {m['python']}",
             f"before: {doc.get('before') or '(not measured)'}; after: {doc.get('after') or 'this tree'}; "
             f"{'QUICK: every size reduced' if doc.get('quick') else 'full sizes'}; load average at start "
             f"{m['load_average_start']}, at end {m.get('load_average_end')}; elapsed {doc.get('elapsed_s')} s",
             "  ".join(h.ljust(w) for h, w in zip(head, widths)), "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in body]
    notes = sorted({n for r in rows for n in r["notes"]})
    lines += [f"note: {n}" for n in notes]
    lines += details(doc)
    lines.append("load b/a: 1-minute load average at the end of the before / after figure. Warm queries run in "
                 "process through the ASGI transport (no socket); the snapshot row's size is reduced from "
                 "20,000 (time budget) unless it says 20,000.")
    met = [r for r in rows if r["met"]]
    missed = [r for r in rows if r["met"] is False]
    lines.append(f"targets: {len(met)} met, {len(missed)} NOT met, {len(rows) - len(met) - len(missed)} n/a")
    return "\n".join(lines)


DETAILS: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "snapshot": (("ready s", ("ready_s",)), ("json.load s", ("json_load_s",)), ("/livez max s", ("slowest_livez_s",))),
    "warm": (("cold s", ("cold_service_pass", "seconds")), ("page median ms", ("page_of_100_ms", "median")),
             ("gpuSummary median ms", ("gpu_summary_ms", "median")),
             ("one median ms", ("one_workload_ms", "median"))),
    "churn": (("changes/s", ("rate_per_s",)), ("resolutions", ("resolutions",)),
              ("marked nothing", ("marked_nothing",)), ("p50 ms", ("p50_ms",)), ("not visible", ("not_visible",))),
    "cli": (("small CPU median s", ("small_cpu_median_s",)),),
    "cli_big": (("big wall s", ("big_wall_s",)), ("big CPU s", ("big_cpu_s",))),
    "live": (("pods loaded", ("load", "pods")), ("list floor s", ("initial_sync", "list_floor_s", "median")),
             ("informer sync s", ("initial_sync", "informer_sync_s", "median")),
             ("app ready s", ("update_to_phase", "app_cache_ready_s")),
             ("sustained updates/s", ("update_to_phase", "sustained_rate_per_s")),
             ("updates/s achieved at 200/s", ("update_to_phase", "achieved_rate_per_s")),
             ("subscriber p99 ms at 200/s", ("update_to_phase", "update_to_subscriber_ms", "p99")),
             ("PATCH p50 ms at 200/s", ("update_to_phase", "patch_round_trip_ms", "median")),
             ("synced again s", ("relist", "synced_again_s")), ("list after s", ("relist", "list_floor_after_s"))),
}


def details(doc: dict[str, Any]) -> list[str]:
    """One line per figure and side with the figures behind the rows (seconds, counts, rates)."""
    lines = []
    for name, keys in DETAILS.items():
        fig = doc["figures"].get(name) or {}
        for side in ("before", "after"):
            got = (fig.get(side) or {}).get("figures")
            if got:
                text = ", ".join(f"{label} {_get(got, *path)}" for label, path in keys)
                lines.append(f"{name} ({side}): {text}")
    return lines
