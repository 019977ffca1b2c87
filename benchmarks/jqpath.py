"""C-jq evaluations and cold resolution on one core: the jq paths of issue 23 item 2.

``python -m benchmarks.jqpath [--workloads 300] [--seed 7] [--repeats 6] [--seconds 40]``
builds the generator's cluster (every catalog type), gathers the resolver inputs as
``WorkloadService.view`` does, resolves every workload once with the C-jq tracer counting
(``set_evaluation_tracer``: one call per run of the C library, a batch of
``Document.prefetch`` counting once) and then times ``resolve`` over them
(``benchmarks.resolution.throughput``), printing workloads/s and the CPU seconds of the
timed part, with the load average. It uses only APIs that the code before the widened
pure-Python path has too, so "before" is the same command with the earlier ``server``
first on ``PYTHONPATH``; run before and after alternately for paired figures.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

from workload_map.paths import default_catalog_dir
from workload_map.definitions.catalog import load_catalog
from workload_map.definitions.registry import DefinitionRegistry
from workload_map.jq import engine as jq_engine
from workload_map.jq import set_evaluation_tracer
from workload_map.service.workloads import WorkloadService

from benchmarks import memory, resolution
from benchmarks.generator import generate


def count_evaluations(inputs: list[resolution.Input]) -> dict[str, int]:
    """C-jq runs over one resolution of every input: single expressions and batches."""
    counts = {"c_jq_runs": 0, "batches": 0}
    original = jq_engine.Document.prefetch

    def traced(expression: str) -> None:
        counts["c_jq_runs"] += 1

    def prefetch(self: Any, expressions: Any) -> None:
        before = counts["c_jq_runs"]
        original(self, expressions)
        counts["batches"] += counts["c_jq_runs"] - before

    set_evaluation_tracer(traced)
    jq_engine.Document.prefetch = prefetch  # type: ignore[method-assign]
    try:
        resolution._resolve_all(inputs)
    finally:
        set_evaluation_tracer(None)
        jq_engine.Document.prefetch = original  # type: ignore[method-assign]
    counts["single_expressions"] = counts["c_jq_runs"] - counts["batches"]
    return counts


def main() -> None:
    """Print the figures as one JSON document."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeats", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=40.0)
    args = parser.parse_args()
    registry = DefinitionRegistry(load_catalog(default_catalog_dir()))
    reader, _ = memory.load_reader(generate(args.workloads, seed=args.seed))
    inputs = resolution.gather_inputs(WorkloadService(registry, reader))
    resolution._resolve_all(inputs)  # compile every program once, as a running server has
    evaluations = count_evaluations(inputs)
    cpu = time.process_time()
    timed = resolution.throughput(inputs, repeats=args.repeats, max_seconds=args.seconds)
    cpu = time.process_time() - cpu
    resolved = timed["repeats"] * len(inputs)
    print(json.dumps({
        "code": jq_engine.__file__.rsplit("/workload_map/", 1)[0].rsplit("/", 2)[-2],
        "workloads": len(inputs), "c_jq": evaluations,
        "workloads_per_s_median": timed["workloads_per_s"]["median"],
        "workloads_per_s_overall": timed["overall_workloads_per_s"],
        "cpu_s": round(cpu, 2), "cpu_ms_per_workload": round(1000 * cpu / resolved, 3) if resolved else None,
        "loadavg": os.getloadavg(),
    }))


if __name__ == "__main__":
    main()
