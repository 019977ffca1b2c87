"""``python -m benchmarks.actions``: time the planning of a write through a definition (pure part).

Builds a JobSet with N replicated jobs (N in 10, 100, 500; 1000 reaches the jq result cap) from the catalog definition and
times ``plan_pod_change`` (locate every template, apply a label + a toleration, build the
JSON Patch) and ``plan_suspend``; prints the median of a bounded loop (at most 50 runs or
5 s per size). The figures say how long a write keeps a worker thread, not the event loop.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

import yaml

from workload_map.definitions.load import load_definition
from workload_map.resolution.changes import parse_change
from workload_map.resolution.writes import plan_pod_change, plan_suspend

CATALOG = Path(__file__).resolve().parents[1] / "catalog" / "jobset-x-k8s-io-jobset-v1alpha2.yaml"
RUNS, BUDGET_S = 50, 5.0


def jobset(jobs: int) -> dict[str, Any]:
    """A JobSet with ``jobs`` replicated jobs of one container each."""
    container = {"name": "main", "image": "img", "resources": {"limits": {"nvidia.com/gpu": "8"}}}
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "big", "namespace": "ml", "resourceVersion": "1"},
            "spec": {"replicatedJobs": [{"name": f"rj-{i}", "replicas": 4, "template": {"spec": {"template": {
                "spec": {"containers": [container]}}}}} for i in range(jobs)]}}


def median_ms(run: Any) -> float:
    """Median milliseconds of ``run()`` over a bounded loop."""
    times: list[float] = []
    deadline = time.monotonic() + BUDGET_S
    while len(times) < RUNS and time.monotonic() < deadline:
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    """Print one line per size."""
    definition = load_definition(yaml.safe_load(CATALOG.read_text(encoding="utf-8")))
    change = parse_change({"labels": {"team": "a"}, "tolerations": [{"key": "gpu", "operator": "Exists"}]})
    print(f"{'replicated jobs':>16} {'plan_pod_change ms':>19} {'patch ops':>10} {'plan_suspend ms':>16}")
    for jobs in (10, 100, 500):
        obj = jobset(jobs)
        ops = len(plan_pod_change(definition, obj, change).patch)
        pod = median_ms(lambda: plan_pod_change(definition, obj, change))
        suspend = median_ms(lambda: plan_suspend(definition, obj, True))
        print(f"{jobs:>16} {pod:>19.2f} {ops:>10} {suspend:>16.2f}")


if __name__ == "__main__":
    main()
