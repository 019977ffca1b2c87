"""``python -m benchmarks.startup``: how long one-shot ``wmap`` commands take to run.

Issue 16 item 5: ``wmap describe -f`` of one small file in at most 0.25 s on the project
machine (2 cores); issue 23 item 6: at most 0.08 s on an idle machine (``python -c "import
yaml, jq"``, printed as the yardstick, starts in about 0.05 s), and ``describe -f`` of
10,000 workloads in one file within 250 MB peak RSS. Each command runs ``--repeats`` times
as a new process after one warm-up run (which writes the bytecode caches, as ``pip
install`` does for a user), beside ``python -c pass``, the interpreter's own start. Printed
per command: median and best wall time, the median CPU time (user + system, the process and
the children it waited for: the figure to compare on a loaded machine, where wall time
includes the wait for a core) and the median peak RSS (``wait4``'s ``ru_maxrss`` of the
child). The load average is printed with the table.

``--before DIR`` runs every ``wmap`` command a second time with ``DIR`` (the ``server``
folder of another checkout, e.g. ``git worktree add ../base <commit>``) first on
``PYTHONPATH``, alternating after/before run by run, and prints both with the ratio of the
medians. ``--big FILE`` adds ``wmap describe -f FILE`` (e.g. the 10,000-workload dump of
``benchmarks.generator``: see docs/engine-speed.md), run ``--big-repeats`` times (default 1).

Options: ``--repeats N`` (default 9), ``--json`` (one JSON object instead of the table).
"""

from __future__ import annotations

import argparse
import json
import os
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


def commands(big: str | None = None) -> list[tuple[str, list[str], bool]]:
    """``(label, argv, is a wmap command)`` of every command measured."""
    wmap = wmap_command()
    out = [
        ("python -c pass", [sys.executable, "-c", "pass"], False),
        ('python -c "import yaml, jq"', [sys.executable, "-c", "import yaml, jq"], False),
        ("wmap --version", [*wmap, "--version"], True),
        (f"wmap describe -f {SMALL_FILE.name} (JobSet, 24 KB)", [*wmap, "describe", "-f", str(SMALL_FILE)], True),
        (f"wmap describe -f sample/{SAMPLE_FILE.name} (72 KB)", [*wmap, "describe", "-f", str(SAMPLE_FILE)], True),
        (f"wmap get jobset --snapshot {SMALL_FILE.name}", [*wmap, "get", "jobset", "--snapshot", str(SMALL_FILE)], True),
        ("wmap get jobset --snapshot sample/ (141 workloads)", [*wmap, "get", "jobset", "--snapshot",
                                                               str(SAMPLE_DIR)], True),
    ]
    if big:
        size = Path(big).stat().st_size / 1e6
        out.append((f"wmap describe -f {Path(big).name} ({size:,.0f} MB)", [*wmap, "describe", "-f", big], True))
    return out


def run_once(argv: list[str], env: dict[str, str], timeout: float = 60) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (the child and its waited-for children) and peak RSS (MiB) of one run."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = started + timeout
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            child.kill()
            raise SystemExit(f"{' '.join(argv)} took more than {timeout:g}s")
        time.sleep(0.002)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    err = child.stderr.read().decode() if child.stderr else ""
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {child.returncode}: {err[-400:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def _figures(runs: list[tuple[float, float, float]]) -> dict[str, float]:
    walls, cpus, peaks = ([r[i] for r in runs] for i in range(3))
    return {"wall_median_s": statistics.median(walls), "wall_best_s": min(walls),
            "cpu_median_s": statistics.median(cpus), "peak_rss_median_mib": statistics.median(peaks), "n": len(runs)}


def measure(repeats: int, before: str | None = None, big: str | None = None,
            big_repeats: int = 1) -> dict[str, dict[str, dict[str, float]]]:
    """``{label: {"after": figures, "before": figures (with --before)}}``; before/after alternate run by run."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    base_env = dict(env, PYTHONPATH=os.pathsep.join(p for p in (before, env.get("PYTHONPATH")) if p)) if before else None
    out: dict[str, dict[str, dict[str, float]]] = {}
    for label, argv, is_wmap in commands(big):
        sides = [("after", env)] + ([("before", base_env)] if base_env is not None and is_wmap else [])
        n, timeout = (big_repeats, 3600.0) if big and argv[-1] == big else (repeats, 60.0)
        for _, side_env in sides:
            if n > 1 or timeout == 60.0:
                run_once(argv, side_env, timeout)  # warm-up: bytecode caches written, files in the page cache
        runs: dict[str, list[tuple[float, float, float]]] = {side: [] for side, _ in sides}
        for _ in range(n):
            for side, side_env in sides:
                runs[side].append(run_once(argv, side_env, timeout))
        out[label] = {side: _figures(r) for side, r in runs.items()}
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.startup", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--before", default=None, metavar="DIR", help="server/ folder of the code to compare with")
    p.add_argument("--big", default=None, metavar="FILE", help="also time wmap describe -f FILE")
    p.add_argument("--big-repeats", type=int, default=1)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if not 1 <= args.repeats <= 100 or not 1 <= args.big_repeats <= 10:
        p.error("--repeats must be between 1 and 100, --big-repeats between 1 and 10")
    figures = measure(args.repeats, args.before, args.big, args.big_repeats)
    load = os.getloadavg()
    if args.json:
        print(json.dumps({"load_average": load, "commands": figures}, indent=2))
        return 0
    print(f"one-shot commands, {args.repeats} runs each after a warm-up"
          f"{', after/before alternated' if args.before else ''}; load average {load[0]:.2f} "
          f"{load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores (targets: describe -f <= 0.25 s, issue 16; "
          "<= 0.08 s on an idle machine and 10,000 workloads <= 250 MB peak RSS, issue 23)")
    width = max(len(label) for label in figures) + 9
    print(f"{'command':<{width}}  {'wall median':>11}  {'wall best':>9}  {'CPU median':>10}  {'peak RSS':>9}  "
          f"{'CPU after/before':>16}")
    for label, sides in figures.items():
        for side, fig in sides.items():
            ratio = ""
            if side == "after" and "before" in sides:
                ratio = f"{fig['cpu_median_s'] / max(sides['before']['cpu_median_s'], 1e-9):.2f}x"
            name = f"{label} [{side}]" if len(sides) > 1 else label
            print(f"{name:<{width}}  {fig['wall_median_s']:>10.3f}s  {fig['wall_best_s']:>8.3f}s  "
                  f"{fig['cpu_median_s']:>9.3f}s  {fig['peak_rss_median_mib']:>6.0f}MiB  {ratio:>16}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
