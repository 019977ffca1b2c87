"""Summaries of repeated measurements and bounded repetition loops.

Every figure is reported as median and p99 over its samples with the sample count;
percentiles use linear interpolation between closest ranks (numpy's default), so with
fewer than 100 samples p99 lies between the two largest values.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) of ``values`` (linear interpolation)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    if len(ordered) == 1:
        return float(ordered[0])
    pos = (len(ordered) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return float(ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo))


@dataclass(frozen=True, slots=True)
class Summary:
    """Median, p99, min, max and count of one figure's samples (in ``unit``)."""

    median: float
    p99: float
    min: float
    max: float
    n: int
    unit: str

    def to_dict(self) -> dict[str, Any]:
        return {"median": _round(self.median), "p99": _round(self.p99), "min": _round(self.min),
                "max": _round(self.max), "n": self.n, "unit": self.unit}


def summarize(values: Sequence[float], unit: str) -> Summary:
    """Summary of ``values``."""
    if not values:
        return Summary(math.nan, math.nan, math.nan, math.nan, 0, unit)
    return Summary(percentile(values, 50), percentile(values, 99), float(min(values)), float(max(values)),
                   len(values), unit)


def _round(value: float) -> float | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return float(f"{value:.4g}") if abs(value) < 1e6 else round(value)


def repeat(fn: Callable[[int], Any], *, max_count: int, max_seconds: float, min_count: int = 1) -> list[float]:
    """Call ``fn(i)`` and time each call (seconds); stop at ``max_count`` calls or once
    ``max_seconds`` have passed and at least ``min_count`` calls were made."""
    samples: list[float] = []
    start = time.perf_counter()
    for i in range(max_count):
        t0 = time.perf_counter()
        fn(i)
        samples.append(time.perf_counter() - t0)
        if len(samples) >= min_count and time.perf_counter() - start >= max_seconds:
            break
    return samples


async def arepeat(fn: Callable[[int], Awaitable[Any]], *, max_count: int, max_seconds: float,
                  min_count: int = 1) -> list[float]:
    """``repeat`` for coroutines."""
    samples: list[float] = []
    start = time.perf_counter()
    for i in range(max_count):
        t0 = time.perf_counter()
        await fn(i)
        samples.append(time.perf_counter() - t0)
        if len(samples) >= min_count and time.perf_counter() - start >= max_seconds:
            break
    return samples
