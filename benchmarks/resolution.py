"""Cold resolution: workloads/s and pods/s through ``workload_map.resolution.resolve`` on one core.

The inputs of every top-level workload are gathered first exactly as ``WorkloadService.view``
gathers them (``reader.descendants``, pods apart from other objects); then only
``resolve()`` is timed, in batches, so the figure is the resolver's and not the cache's.
Nothing is memoized between repeats (``resolve`` is pure; compiled jq programs stay cached,
as they do in the server).

Also measured:

* where the time goes: wall time inside ``JqProgram.all``/``first`` (jq), split into the
  fast path (``FastPath.evaluate``), JSON serialization for jq (``Document.text``) and the
  C jq program; the rest is Python in ``workload_map.resolution`` (timer wrappers, ~0.3 us per
  call; a cProfile pass lists the hottest functions);
* the fast-path gain: the same inputs with the fast path disabled (``parse_fast_path``
  patched to give up, compiled programs dropped), restored afterwards;
* per catalog type: milliseconds per workload and share of the resolver's time.
"""

from __future__ import annotations

import cProfile
import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from workload_map.definitions.model import Definition
from workload_map.jq import engine as jq_engine
from workload_map.jq import fastpath as jq_fastpath
from workload_map.resolution import resolve
from workload_map.service.workloads import WorkloadService

from benchmarks.stats import summarize


@dataclass(slots=True)
class Input:
    """What ``resolve`` receives for one workload."""

    definition: Definition
    origin: str
    root: dict[str, Any]
    objects: list[dict[str, Any]]
    pods: list[dict[str, Any]]
    kind: str


def gather_inputs(service: WorkloadService) -> list[Input]:
    """The resolver inputs of every top-level workload, as ``WorkloadService.view`` builds them."""
    reader, registry = service.reader, service.registry
    entries = list(registry.entries())
    covered = {e.gvk for e in entries}
    out: list[Input] = []
    for entry in entries:
        for obj in reader.list(entry.gvk):
            if not service.is_top_level(obj, covered):
                continue
            uid = str(obj.get("metadata", {}).get("uid", ""))
            related = reader.descendants(uid) if uid else []
            pods = [o for o in related if o.get("kind") == "Pod" and o.get("apiVersion") == "v1"]
            objects = [o for o in related if not (o.get("kind") == "Pod" and o.get("apiVersion") == "v1")]
            out.append(Input(entry.definition, entry.origin, obj, objects, pods, entry.gvk.kind))
    return out


def _resolve_all(inputs: list[Input]) -> int:
    pods = 0
    for i in inputs:
        view = resolve(i.definition, i.root, objects=i.objects, pods=i.pods, origin=i.origin)
        pods += len(view.all_pods())
    return pods


def throughput(inputs: list[Input], *, repeats: int, batch: int = 25, max_seconds: float = 60.0) -> dict[str, Any]:
    """Batched timing of ``resolve`` over ``inputs``, ``repeats`` times (bounded in time).

    Returns workloads/s and pods/s summaries over batches (p99 is the slow tail: the
    1st-percentile throughput, i.e. the p99 batch time turned into a rate) and ms per
    workload per kind.
    """
    batches = [inputs[i:i + batch] for i in range(0, len(inputs), batch)]
    wl_rates: list[float] = []
    pod_rates: list[float] = []
    per_kind: dict[str, list[float]] = {}
    total_time = 0.0
    total_wl = 0
    start = time.perf_counter()
    done = 0
    for _ in range(repeats):
        for chunk in batches:
            t0 = time.perf_counter()
            pods = 0
            for i in chunk:
                t1 = time.perf_counter()
                view = resolve(i.definition, i.root, objects=i.objects, pods=i.pods, origin=i.origin)
                per_kind.setdefault(i.kind, []).append(time.perf_counter() - t1)
                pods += len(view.all_pods())
            dt = time.perf_counter() - t0
            total_time += dt
            total_wl += len(chunk)
            wl_rates.append(len(chunk) / dt)
            pod_rates.append(pods / dt)
        done += 1
        if time.perf_counter() - start > max_seconds:
            break
    wl = summarize(wl_rates, "workloads/s")
    pd = summarize(pod_rates, "pods/s")
    slow = sorted(wl_rates)
    slow_pods = sorted(pod_rates)
    return {
        "workloads_per_s": {**wl.to_dict(), "p99": _q(slow, 1), "p99_meaning": "1st-percentile batch rate"},
        "pods_per_s": {**pd.to_dict(), "p99": _q(slow_pods, 1), "p99_meaning": "1st-percentile batch rate"},
        "overall_workloads_per_s": round(total_wl / total_time, 1) if total_time else None,
        "batches": len(wl_rates), "batch_size": batch, "repeats": done, "workloads": len(inputs),
        "ms_per_workload_by_kind": {k: round(1000 * sorted(v)[len(v) // 2], 3) for k, v in sorted(per_kind.items())},
        "share_of_time_by_kind": _shares(per_kind),
    }


def _q(ordered: list[float], q: float) -> float | None:
    from benchmarks.stats import percentile

    return round(percentile(ordered, q), 1) if ordered else None


def _shares(per_kind: dict[str, list[float]]) -> dict[str, float]:
    total = sum(sum(v) for v in per_kind.values()) or 1.0
    return {k: round(100 * sum(v) / total, 1) for k, v in sorted(per_kind.items(), key=lambda kv: -sum(kv[1]))}


@contextmanager
def _timers() -> Iterator[dict[str, float]]:
    """Wall time spent in jq entry points, the fast path and jq input serialization."""
    acc = {"jq_calls": 0.0, "fast_path": 0.0, "serialize": 0.0, "calls": 0, "fast_hits": 0}
    program = jq_engine.JqProgram
    orig_all, orig_first = program.all, program.first
    orig_eval = jq_fastpath.FastPath.evaluate
    orig_text = jq_engine.Document.text
    perf = time.perf_counter

    def timed_all(self: Any, doc: Any) -> Any:
        t0 = perf()
        try:
            return orig_all(self, doc)
        finally:
            acc["jq_calls"] += perf() - t0
            acc["calls"] += 1

    def timed_first(self: Any, doc: Any, default: Any = None) -> Any:
        t0 = perf()
        try:
            return orig_first(self, doc, default)
        finally:
            acc["jq_calls"] += perf() - t0
            acc["calls"] += 1

    def timed_eval(self: Any, value: Any, limit: int | None = None) -> Any:
        t0 = perf()
        out = orig_eval(self, value, limit)
        acc["fast_path"] += perf() - t0
        if out is not None:
            acc["fast_hits"] += 1
        return out

    def timed_text(self: Any) -> str:
        t0 = perf()
        try:
            return orig_text.fget(self)  # type: ignore[no-any-return]
        finally:
            acc["serialize"] += perf() - t0

    program.all, program.first = timed_all, timed_first  # type: ignore[method-assign]
    jq_fastpath.FastPath.evaluate = timed_eval  # type: ignore[method-assign]
    jq_engine.Document.text = property(timed_text)  # type: ignore[method-assign,assignment]
    try:
        yield acc
    finally:
        program.all, program.first = orig_all, orig_first  # type: ignore[method-assign]
        jq_fastpath.FastPath.evaluate = orig_eval  # type: ignore[method-assign]
        jq_engine.Document.text = orig_text  # type: ignore[method-assign]


def jq_share(inputs: list[Input]) -> dict[str, Any]:
    """Share of resolver wall time inside ``workload_map.jq`` and its parts (one timed pass)."""
    _resolve_all(inputs)  # warm compiled programs
    with _timers() as acc:
        t0 = time.perf_counter()
        _resolve_all(inputs)
        total = time.perf_counter() - t0
    jq_total = acc["jq_calls"]
    c_jq = max(0.0, jq_total - acc["fast_path"] - acc["serialize"])
    pct = (lambda x: round(100 * x / total, 1)) if total else (lambda x: None)
    return {
        "method": "perf_counter wrappers around JqProgram.all/first, FastPath.evaluate and Document.text",
        "total_s": round(total, 3), "workloads": len(inputs),
        "jq_pct": pct(jq_total), "python_pct": pct(total - jq_total),
        "jq_breakdown_pct": {"c_jq_program": pct(c_jq), "json_serialization_for_jq": pct(acc["serialize"]),
                             "fast_path_python": pct(acc["fast_path"])},
        "jq_evaluations": acc["calls"], "fast_path_hits": acc["fast_hits"],
        "fast_path_hit_pct": round(100 * acc["fast_hits"] / acc["calls"], 1) if acc["calls"] else None,
        "jq_us_per_evaluation": round(1e6 * jq_total / acc["calls"], 1) if acc["calls"] else None,
    }


def hot_functions(inputs: list[Input], top: int = 15) -> dict[str, Any]:
    """cProfile of one pass: own time by package, hottest functions, cumulative project functions."""
    from benchmarks.profiling import summary

    profile = cProfile.Profile()
    profile.enable()
    _resolve_all(inputs)
    profile.disable()
    return summary(profile, top=top, cumulative_filter=("/server/",))


@contextmanager
def fast_path_disabled() -> Iterator[None]:
    """Compile every program without the fast path (caches dropped before and after)."""
    original = jq_engine.parse_fast_path
    jq_engine.clear_programs()
    jq_engine.parse_fast_path = lambda expression: None  # type: ignore[assignment]
    try:
        yield
    finally:
        jq_engine.parse_fast_path = original
        jq_engine.clear_programs()


def sample(inputs: list[Input], n: int, seed: int = 7) -> list[Input]:
    """A reproducible sample of ``n`` inputs (all of them when fewer)."""
    if len(inputs) <= n:
        return list(inputs)
    return random.Random(seed).sample(inputs, n)


def run(service: WorkloadService, *, sample_size: int, repeats: int, max_seconds: float,
        profile: bool = True) -> dict[str, Any]:
    """Every cold-resolution figure over a sample of the service's workloads."""
    inputs = sample(gather_inputs(service), sample_size)
    _resolve_all(inputs[:50])  # compile programs once, as a running server has
    with_fast = throughput(inputs, repeats=repeats, max_seconds=max_seconds)
    with fast_path_disabled():
        _resolve_all(inputs[:50])
        without_fast = throughput(inputs, repeats=max(1, repeats // 2), max_seconds=max_seconds / 2)
    share = jq_share(inputs)
    gain = None
    a, b = with_fast["workloads_per_s"]["median"], without_fast["workloads_per_s"]["median"]
    if a and b:
        gain = round(a / b, 2)
    out = {"sample_workloads": len(inputs), "sample_pods": sum(len(i.pods) for i in inputs),
           "with_fast_path": with_fast, "without_fast_path": without_fast, "fast_path_speedup": gain,
           "jq_share": share}
    if profile:
        out["profile"] = hot_functions(inputs)
    return out
