"""``python -m benchmarks``: run every figure, print the table, write the JSON.

Options: ``--sizes 500,5000,20000`` (clusters for the query and RSS figures), ``--quick``
(small sizes and short loops, about two minutes), ``--skip-cluster`` (no kube-apiserver),
``--output PATH`` (default ``benchmarks/results/latest.json``), ``--seed``, ``--sample``,
``--cluster-pods``, ``--updates``, ``--update-rate``, ``--load-budget``; ``--skip-targets``, ``--before REV``.

At the end the issue-23 targets table is printed (``python -m benchmarks.targets``, with
the same ``--quick`` and ``--skip-cluster``, and ``--before``): about 25 more minutes at
full sizes, a few with ``--quick``; ``--skip-targets`` leaves it out.

Every loop is bounded in count and time; the run aims at under 10 minutes on 2 cores
(``--time-budget``). The real control-plane figures run first; the API-server load gets
what the time budget leaves after an estimate of the in-process figures, and the cluster
is scaled down (said in the output) when loading would take longer.
Progress goes to stderr, the table to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import machine
from benchmarks.report import build_table, write_json

DEFAULT_OUTPUT = Path(__file__).resolve().parent / "results" / "latest.json"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default=None, help="cluster sizes in workloads, comma-separated "
                                                 "(default 500,5000,20000; --quick: 200,1000)")
    p.add_argument("--quick", action="store_true", help="small sizes and short loops")
    p.add_argument("--skip-cluster", action="store_true", help="skip the real control-plane figures")
    p.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="JSON results path")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--cluster-pods", type=int, default=None, help="pods loaded into the API server (20000)")
    p.add_argument("--updates", type=int, default=None, help="pod status updates (1000)")
    p.add_argument("--update-rate", type=float, default=200.0, help="updates per second (200)")
    p.add_argument("--load-budget", type=float, default=None, help="seconds allowed to load the API server (150)")
    p.add_argument("--sample", type=int, default=None,
                   help="workloads in the cold-resolution sample and the memory cluster (500; --quick: 200)")
    p.add_argument("--skip-targets", action="store_true",
                   help="do not run the issue-23 targets table (python -m benchmarks.targets) at the end")
    p.add_argument("--before", default=None, help="revision the targets table measures as 'before' "
                                                  "(python -m benchmarks.targets --before; none: only this tree)")
    p.add_argument("--time-budget", type=float, default=None,
                   help="seconds the whole run aims at (570; --quick: 150); the API-server load and the "
                        "query loops shrink to fit")
    args = p.parse_args(argv)
    sizes = args.sizes or ("200,1000" if args.quick else "500,5000,20000")
    try:
        args.size_list = [int(s) for s in sizes.split(",") if s.strip()]
    except ValueError:
        p.error(f"--sizes must be integers separated by commas, got {sizes!r}")
    if not args.size_list or any(s < 1 for s in args.size_list):
        p.error("--sizes needs at least one positive size")
    return args


class Progress:
    def __init__(self) -> None:
        self.t0 = time.monotonic()

    def __call__(self, message: str) -> None:
        print(f"[{time.monotonic() - self.t0:6.1f}s] {message}", file=sys.stderr, flush=True)


def plan(args: argparse.Namespace) -> dict[str, Any]:
    """Sample sizes and loop bounds for this run."""
    quick = args.quick
    return {
        "time_budget_s": args.time_budget or (150 if quick else 570),
        "resolution_sample": args.sample or (200 if quick else 500),
        "resolution_repeats": 2 if quick else 3,
        "resolution_seconds": 10 if quick else 30,
        "memory_workloads": args.sample or (200 if quick else 500),
        "query_max_count": 100 if quick else 300,
        "query_seconds": {"small": 2 if quick else 5, "large": 4 if quick else 10},
        "cluster_pods": args.cluster_pods or (2000 if quick else 20000),
        "cluster_repeats": 2 if quick else 3,
        "updates": args.updates or (200 if quick else 1000),
        "update_rate": args.update_rate,
        "load_budget_s": args.load_budget or (40 if quick else 150),
        "cluster_other_s": 45 if quick else 100,
    }


def estimate_in_process_s(sizes: list[int], p: dict[str, Any]) -> float:
    """Seconds the in-process figures take on the 2-core reference machine (load ~2): about
    35 s for the resolution and memory samples, then per size 15 s plus 8.5 ms per workload
    (generation and store load, cold service pass, bounded query loops)."""
    scale = p["resolution_sample"] / 500
    return 35.0 * scale + sum(15.0 + 0.0085 * min(s, 200_000) for s in sizes)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    log = Progress()
    p = plan(args)
    command = "python -m benchmarks " + " ".join(sys.argv[1:] if argv is None else argv)
    doc: dict[str, Any] = {"command": command.strip(), "machine": machine.describe(), "plan": p, "sizes": {}}
    log(f"machine: {doc['machine']['cpu_model']}, {doc['machine']['cores']} cores, Python "
        f"{doc['machine']['python']}, load {doc['machine']['load_average_start']}")

    from workload_map.paths import default_catalog_dir
    from workload_map.definitions.catalog import load_catalog
    from workload_map.definitions.registry import DefinitionRegistry
    from workload_map.service.workloads import WorkloadService

    from benchmarks import memory, queries, resolution
    from benchmarks.generator import generate

    registry = DefinitionRegistry(load_catalog(default_catalog_dir()))
    doc["catalog_definitions"] = len(list(registry.entries()))

    # 1. real control plane first: its API-server load gets the budget the in-process
    # figures (whose fixed costs grow with --sizes) leave over
    if args.skip_cluster:
        doc["cluster"] = {"skipped": "--skip-cluster"}
    else:
        from benchmarks import cluster as cluster_bench

        in_process = estimate_in_process_s(args.size_list, p)
        load_budget = max(20.0, min(p["load_budget_s"], p["time_budget_s"] - in_process - p["cluster_other_s"]))
        log(f"cluster: real kube-apiserver + etcd (load budget {load_budget:.0f} s; about {in_process:.0f} s "
            "planned for the in-process figures) ...")
        try:
            doc["cluster"] = cluster_bench.run(target_pods=p["cluster_pods"], load_budget_s=load_budget,
                                               repeats=p["cluster_repeats"], updates=p["updates"],
                                               update_rate=p["update_rate"], seed=args.seed + 300, log=log)
        except cluster_bench.ClusterUnavailable as exc:
            doc["cluster"] = {"skipped": str(exc)}
            log(f"cluster figures skipped: {exc}")

    # 2. cold resolution on a sample
    log(f"cold resolution: sample of {p['resolution_sample']} workloads ...")
    sample_cluster = generate(p["resolution_sample"], seed=args.seed + 100)
    sample_reader, _ = memory.load_reader(sample_cluster)
    doc["resolution"] = resolution.run(WorkloadService(registry, sample_reader), sample_size=p["resolution_sample"],
                                       repeats=p["resolution_repeats"], max_seconds=p["resolution_seconds"])
    doc["attribution_check"] = attribution_check(sample_cluster, WorkloadService(registry, sample_reader))
    del sample_reader
    gc.collect()

    # 3. memory
    log(f"memory: tracemalloc over {p['memory_workloads']} workloads ...")
    doc["memory"] = memory.measure(generate(p["memory_workloads"], seed=args.seed + 200), registry)
    gc.collect()

    # 4. per size: store load, cold service pass, warm queries
    largest = max(args.size_list)
    for size in args.size_list:
        log(f"size {size}: generating and loading the store ...")
        cluster = generate(size, seed=args.seed)
        reader, load = memory.load_reader(cluster)
        load["workloads"] = size
        log(f"size {size}: {load['pods']} pods, {load['objects']} objects loaded in {load['seconds']} s; queries ...")
        budget = p["query_seconds"]["large" if size >= 5000 else "small"]
        figs = asyncio.run(queries.run(cluster, reader, max_count=p["query_max_count"], max_seconds=budget))
        doc["sizes"][str(size)] = {"load": load, "queries": figs}
        if size == min(args.size_list) and not args.quick:
            log(f"size {size}: profiling warm page and gpuSummary requests ...")
            doc["sizes"][str(size)]["query_profile"] = asyncio.run(queries.profile_queries(cluster, reader, count=1))
        del reader, cluster
        gc.collect()
        log(f"size {size}: done (one workload p99 {figs['one_workload_ms']['p99']} ms, page p99 "
            f"{figs['page_of_100_ms']['p99']} ms, gpuSummary p99 {figs['gpu_summary_ms']['p99']} ms)")
    doc["largest_size"] = largest

    # 5. materialized views at the largest size: start to ready, /livez, change latency, IPC
    from benchmarks import views as views_bench

    log(f"views: start to ready, /livez, gpuSummary after a change, change to phase at {largest} workloads ...")
    cluster = generate(largest, seed=args.seed)
    reader, load = memory.load_reader(cluster)
    doc["views"] = asyncio.run(views_bench.run(reader, registry, load_s=load["seconds"], workers=0,
                                               rate=p["update_rate"], seconds=3 if args.quick else 8))
    del reader, cluster
    gc.collect()
    log(f"views: {views_bench.headline(doc['views'])}")

    doc["machine"]["load_average_end"] = machine.load_average()
    doc["elapsed_s"] = round(time.monotonic() - log.t0, 1)
    table = build_table(doc)
    doc["targets"] = table.verdicts
    write_json(doc, args.output)
    print_report(doc, table, args.output)
    if not args.skip_targets:
        sys.stdout.flush()
        return run_targets(args)
    return 0


def run_targets(args: argparse.Namespace) -> int:
    """``python -m benchmarks.targets`` with this run's ``--quick``, ``--skip-cluster`` and ``--before``."""
    from benchmarks import targets

    argv = ["--output", str(args.output.with_name("targets.json"))]
    argv += ["--quick"] if args.quick else []
    argv += ["--skip-cluster"] if args.skip_cluster else []
    argv += ["--before", args.before] if args.before is not None else []
    print()
    return targets.main(argv)


def attribution_check(cluster: Any, service: Any) -> dict[str, Any]:
    """Per type: pods generated vs pods in the served views, unattributed pods, errors."""
    expected: dict[str, tuple[str, int]] = {}
    for wl in cluster.workloads():
        expected[wl.root["metadata"]["uid"]] = (wl.spec.type, len(wl.pods))
    out: dict[str, dict[str, int]] = {}
    for view in service.workloads():
        kind, pods = expected.get(view.uid, ("<unexpected top-level>", 0))
        row = out.setdefault(kind, {"workloads": 0, "pods_generated": 0, "pods_in_views": 0, "unattributed": 0,
                                    "errors": 0})
        row["workloads"] += 1
        row["pods_generated"] += pods
        row["pods_in_views"] += len(view.all_pods())
        row["unattributed"] += len(view.unattributed)
        row["errors"] += len(view.errors) + sum(len(c.errors) for c in view.all_components())
    missing = len(expected) - sum(r["workloads"] for k, r in out.items() if not k.startswith("<"))
    problems = {k: r for k, r in out.items()
                if r["pods_generated"] != r["pods_in_views"] or r["unattributed"] or r["errors"]}
    return {"by_type": dict(sorted(out.items())), "workloads_not_listed": missing, "problems": problems}


def print_report(doc: dict[str, Any], table: Any, output: Path) -> None:
    m = doc["machine"]
    print(f"workload-map-server benchmarks  {m['date']}")
    print(f"machine: {m['cpu_model']}, {m['cores']} cores ({m['usable_cores']} usable), "
          f"{(m['memory_bytes'] or 0) / 2**30:.1f} GiB, Python {m['python']} ({m['implementation']})")
    print(f"load average at start {m['load_average_start']}, at end {m.get('load_average_end')}; "
          f"elapsed {doc['elapsed_s']} s")
    print(f"command: {doc['command']}")
    print()
    print(table.render())
    print("(throughput rows: the p99 column is the slow tail, the 1st-percentile batch rate; "
          "n = batches, requests or updates measured)")
    print()
    if doc.get("views"):
        from benchmarks import views as views_bench

        print(views_bench.render(doc["views"]))
        print()
    res = doc.get("resolution") or {}
    if res:
        kinds = res["with_fast_path"]["share_of_time_by_kind"]
        ms = res["with_fast_path"]["ms_per_workload_by_kind"]
        top = ", ".join(f"{k} {v}% ({ms.get(k)} ms/wl)" for k, v in list(kinds.items())[:6])
        print(f"resolver time by kind (share, median ms per workload): {top}")
    check = doc.get("attribution_check") or {}
    if check.get("problems"):
        for kind, row in check["problems"].items():
            print(f"attribution check: {kind}: {row['pods_in_views']} of {row['pods_generated']} generated pods "
                  f"in the views, {row['unattributed']} unattributed, {row['errors']} errors")
    cl = doc.get("cluster") or {}
    if cl.get("skipped"):
        print(f"cluster figures skipped: {cl['skipped']}")
    else:
        load = cl.get("load") or {}
        if load:
            print(f"cluster load: {load['pods']} pods ({load['pods_with_status']} with their status), "
                  f"{load['objects']} objects in {load['seconds']} s ({load['requests_per_s']} requests/s)" + (f"; {load['scaled_down']}" if load.get("scaled_down")
                                                             else "") +
                  (f"; {load['error_count']} errors" if load.get("error_count") else ""))
        sync = cl.get("initial_sync") or {}
        if sync:
            print(f"list floor: {sync['floor_note']}")
    missed = [v for v in doc.get("targets", []) if v["met"] is False]
    met = [v for v in doc.get("targets", []) if v["met"]]
    print(f"targets: {len(met)} met, {len(missed)} NOT met" +
          (": " + "; ".join(f"{v['target']} ({v['size']})" for v in missed) if missed else ""))
    print(f"JSON: {output}")


if __name__ == "__main__":
    sys.exit(main())
