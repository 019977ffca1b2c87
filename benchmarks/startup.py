"""``python -m benchmarks.startup``: how long one-shot ``wmap`` commands take to run.

Issue 16 item 5: ``wmap describe -f`` of one small file in at most 0.25 s on the project
machine (2 cores). Each command runs ``--repeats`` times as a new process after one
warm-up run (which writes the bytecode caches, as ``pip install`` does for a user), beside
``python -c pass``, the interpreter's own start. Printed per command: median and best wall
time, and the median CPU time (user + system, the process and its resolver child) —
the CPU figure is the one to compare on a loaded machine, where wall time includes the
wait for a core. The load average is printed with the table.

Options: ``--repeats N`` (default 9), ``--json`` (one JSON object instead of the table).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SMALL_FILE = REPO / "tests" / "fixtures" / "objects" / "jobset-x-k8s-io-jobset-v1alpha2" / "running.yaml"
SAMPLE_FILE = REPO / "server" / "workload_map" / "sample" / "jobset-x-k8s-io-jobset-v1alpha2.yaml"
SAMPLE_DIR = REPO / "server" / "workload_map" / "sample"


def wmap_command() -> list[str]:
    """The installed ``wmap`` script beside this interpreter, else ``python -m workload_map``."""
    script = Path(sys.executable).parent / "wmap"
    return [str(script)] if script.exists() else [sys.executable, "-m", "workload_map"]


def commands() -> list[tuple[str, list[str]]]:
    wmap = wmap_command()
    return [
        ("python -c pass", [sys.executable, "-c", "pass"]),
        ("wmap --version", [*wmap, "--version"]),
        (f"wmap describe -f {SMALL_FILE.name} (JobSet, 24 KB)", [*wmap, "describe", "-f", str(SMALL_FILE)]),
        (f"wmap describe -f sample/{SAMPLE_FILE.name} (72 KB)", [*wmap, "describe", "-f", str(SAMPLE_FILE)]),
        (f"wmap get jobset --snapshot {SMALL_FILE.name}", [*wmap, "get", "jobset", "--snapshot", str(SMALL_FILE)]),
        ("wmap get jobset --snapshot sample/ (141 workloads)", [*wmap, "get", "jobset", "--snapshot",
                                                               str(SAMPLE_DIR)]),
    ]


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run (CPU of the process and the children it waited for)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()[-400:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(repeats: int) -> dict[str, dict[str, float]]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out: dict[str, dict[str, float]] = {}
    for label, argv in commands():
        run_once(argv, env)  # warm-up: bytecode caches written, files in the page cache
        runs = [run_once(argv, env) for _ in range(repeats)]
        walls, cpus = [w for w, _ in runs], [c for _, c in runs]
        out[label] = {"wall_median_s": statistics.median(walls), "wall_best_s": min(walls),
                      "cpu_median_s": statistics.median(cpus), "n": len(runs)}
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.startup", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if not 1 <= args.repeats <= 100:
        p.error("--repeats must be between 1 and 100")
    figures = measure(args.repeats)
    load = os.getloadavg()
    if args.json:
        print(json.dumps({"load_average": load, "commands": figures}, indent=2))
        return 0
    print(f"one-shot commands, {args.repeats} runs each after a warm-up; load average {load[0]:.2f} "
          f"{load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores (targets: describe -f <= 0.25 s, issue 16; <= 0.08 s on an idle machine, issue 23)")
    width = max(len(label) for label in figures)
    print(f"{'command':<{width}}  {'wall median':>11}  {'wall best':>9}  {'CPU median':>10}")
    for label, fig in figures.items():
        print(f"{label:<{width}}  {fig['wall_median_s']:>10.3f}s  {fig['wall_best_s']:>8.3f}s  "
              f"{fig['cpu_median_s']:>9.3f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
