"""``python -m benchmarks.targets``: every issue-23 target, before and after, in one table.

One row per target of issue 23 ("Targets"): the bound, the size it was measured at, the
figure before and after, whether "after" meets it, and the load average (1-minute, at the
end of each figure's child process) of each side.

Before/after: ``--before REV`` (default ``37857a9``, ``none`` to measure only the working
tree) checks REV out into a temporary ``git worktree`` (removed at the end) and runs every
figure twice, in a child process each: once with ``<worktree of REV>/server`` first on
``PYTHONPATH`` and once with this tree's ``server``. The benchmark code is this tree's for
both. The two runs of one figure follow each other (paired); which side goes first
alternates from figure to figure, so a drift of the machine's load does not favour one side.
Shared inputs (the snapshot dump, the big ``describe -f`` file) are written once.

The figures (``benchmarks.target_figures``) reuse ``benchmarks.fastjson``, ``queries``,
``churn``, ``startup``, ``cluster`` and ``recovery``. Sizes: see :func:`plan`; ``--quick``
shrinks every size and loop (said in the output); the full run is planned for about 25
minutes on 2 cores, so the snapshot figure runs at 2,000 workloads (a 20,000-workload dump
is 2.2 GB and takes minutes per side to write and serve; the size is printed in each row).
Every child is bounded by a timeout; once ``--time-budget`` is spent, the remaining
figures are skipped (said in the row).

Options: ``--quick``, ``--before REV``, ``--after REV`` (default this tree; ``--before X
--after X`` measures a revision against itself, the noise floor of a pairing), ``--skip-cluster`` (no kube-apiserver: the live rows
say skipped), ``--only snapshot,warm,...``, ``--output PATH`` (default
``benchmarks/results/targets.json``, gitignored), ``--time-budget S``, ``--seed``.
Progress goes to stderr, the table to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import machine
from benchmarks.target_rows import ROWS, render, verdicts

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUTPUT = REPO / "benchmarks" / "results" / "targets.json"
DEFAULT_BEFORE = "37857a9"
ORDER = ("snapshot", "warm", "churn", "cli", "cli_big", "live")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.targets", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes and short loops (a few minutes)")
    p.add_argument("--before", default=DEFAULT_BEFORE, help=f"revision measured as 'before' ({DEFAULT_BEFORE}; "
                                                             "none: only this tree)")
    p.add_argument("--after", default=None, help="revision measured as 'after' (default: this working tree; "
                                                  "--before REV --after REV measures a revision against itself)")
    p.add_argument("--skip-cluster", action="store_true", help="no real control plane: live rows skipped")
    p.add_argument("--only", default=",".join(ORDER), help="figures to run, comma-separated")
    p.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    p.add_argument("--time-budget", type=float, default=None, help="seconds (1500; --quick: 720)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--figure", help=argparse.SUPPRESS)  # child process: run one figure
    p.add_argument("--params", help=argparse.SUPPRESS)
    p.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.figures = [f.strip() for f in args.only.split(",") if f.strip()]
    if "cli" in args.figures and "cli_big" not in args.figures:
        args.figures.append("cli_big")  # ``--only cli``: both describe -f figures, as before the split
    unknown = sorted(set(args.figures) - set(ORDER))
    if unknown:
        p.error(f"--only: unknown figures {unknown}; choose from {', '.join(ORDER)}")
    return args


def plan(quick: bool, seed: int) -> dict[str, dict[str, Any]]:
    """Parameters of each figure (sizes in workloads, pods, changes/s; bounds in seconds)."""
    if quick:
        return {
            "snapshot": {"workloads": 200, "timeout": 120, "child_timeout": 200},
            "warm": {"workloads": 500, "max_count": 60, "max_seconds": 3, "seed": seed, "child_timeout": 240},
            "churn": {"workloads": 200, "rate": 1000, "seconds": 3, "seed": seed, "child_timeout": 240},
            "cli": {"repeats": 5, "child_timeout": 240},
            "cli_big": {"big_workloads": 300, "timeout": 120, "child_timeout": 240},
            "live": {"pods": 1000, "load_budget_s": 30, "repeats": 2, "updates": 200, "rate": 200, "sweep": [50, 100, 200],
                     "outage_s": 3, "seed": seed + 300, "child_timeout": 420},
        }
    return {
        "snapshot": {"workloads": 2000, "timeout": 600, "child_timeout": 900},
        "warm": {"workloads": 20000, "max_count": 300, "max_seconds": 10, "seed": seed, "child_timeout": 900},
        "churn": {"workloads": 1000, "rate": 1000, "seconds": 10, "seed": seed, "child_timeout": 600},
        "cli": {"repeats": 9, "child_timeout": 300},
        "cli_big": {"big_workloads": 10000, "timeout": 600, "child_timeout": 900},
        "live": {"pods": 20000, "load_budget_s": 150, "repeats": 3, "updates": 1000, "rate": 200,
                 "sweep": [50, 100, 150, 200],
                 "outage_s": 10, "seed": seed + 300, "child_timeout": 1200},
    }


def log(message: str, t0: float = time.monotonic()) -> None:
    print(f"[{time.monotonic() - t0:6.1f}s] {message}", file=sys.stderr, flush=True)


class Sides:
    """The code roots measured: ``after`` (this tree) and optionally ``before`` (a worktree of a revision)."""

    def __init__(self, before: str | None, scratch: Path, *, after: str | None = None) -> None:
        self._worktrees: list[Path] = []
        self.roots: dict[str, Path] = {}
        if before:
            self.roots["before"] = self._checkout(before, scratch / "before")
        self.roots["after"] = self._checkout(after, scratch / "after") if after else REPO

    def _checkout(self, rev: str, path: Path) -> Path:
        """A temporary worktree of ``rev`` at ``path``.

        Raises:
            SystemExit: git could not check ``rev`` out (its message is given).
        """
        done = subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(path), rev],
                              capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            self.close()
            raise SystemExit(f"cannot check out revision {rev!r} into a worktree: {done.stderr.strip()[-400:]}")
        self._worktrees.append(path)
        return path

    def close(self) -> None:
        while self._worktrees:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(self._worktrees.pop())],
                           capture_output=True, timeout=120)

    def run(self, side: str, name: str, params: dict[str, Any], scratch: Path, timeout: float) -> dict[str, Any]:
        """One figure in a child process with ``side``'s server code first on ``PYTHONPATH``."""
        result = scratch / f"{name}-{side}.json"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(self.roots[side] / "server"), str(REPO)])}
        command = [sys.executable, "-m", "benchmarks.targets", "--figure", name, "--params", json.dumps(params),
                   "--result", str(result)]
        try:
            subprocess.run(command, cwd=REPO, env=env, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {timeout:g} s", "load_end": machine.load_average()}
        if not result.exists():
            return {"error": "the child wrote no result", "load_end": machine.load_average()}
        doc: dict[str, Any] = json.loads(result.read_text(encoding="utf-8"))
        return doc


def prepare(name: str, params: dict[str, Any], scratch: Path, seed: int) -> dict[str, Any]:
    """Shared inputs of a figure, written once for both sides (the dumps)."""
    from benchmarks.snapshot import write_dump

    if name == "snapshot":
        dump = scratch / "snapshot.json"
        params = {**params, "dump": str(dump), "written": write_dump(int(params["workloads"]), dump, seed=seed)}
    elif name == "cli_big":
        big = scratch / "describe.json"
        params = {**params, "big": str(big), "written": write_dump(int(params["big_workloads"]), big, seed=seed)}
    return params


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.figure:
        from benchmarks.target_figures import run_child

        return run_child(args.figure, json.loads(args.params), args.result)
    budget = args.time_budget or (720.0 if args.quick else 1500.0)
    started = time.monotonic()
    figures = plan(args.quick, args.seed)
    before = None if args.before.lower() in ("", "none") else args.before
    doc: dict[str, Any] = {"command": "python -m benchmarks.targets " + " ".join(sys.argv[1:] if argv is None else argv),
                           "machine": machine.describe(), "quick": args.quick, "before": before,
                           "after": args.after or "this tree", "figures": {}}
    log(f"load average {doc['machine']['load_average_start']}; before: {before or '(none)'}; "
        f"{'quick sizes' if args.quick else 'full sizes'}; budget {budget:.0f} s")
    with tempfile.TemporaryDirectory(prefix="wmap-targets-") as tmp:
        scratch = Path(tmp)
        sides = Sides(before, scratch, after=args.after)
        try:
            for index, name in enumerate(n for n in ORDER if n in args.figures):
                doc["figures"][name] = run_figure(name, figures[name], sides, scratch, args, index,
                                                  budget - (time.monotonic() - started))
        finally:
            sides.close()
    doc["machine"]["load_average_end"] = machine.load_average()
    doc["elapsed_s"] = round(time.monotonic() - started, 1)
    doc["targets"] = verdicts(doc)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(doc, indent=2, default=str) + "\n", encoding="utf-8")
    print(render(doc))
    print(f"JSON: {args.output}")
    return 0


def run_figure(name: str, params: dict[str, Any], sides: Sides, scratch: Path, args: argparse.Namespace,
               index: int, left_s: float) -> dict[str, Any]:
    """Both sides of one figure, paired; the first side alternates with ``index``."""
    out: dict[str, Any] = {"params": params}
    if name == "live" and args.skip_cluster:
        out["skipped"] = "--skip-cluster"
        return out
    if name == "live":
        from benchmarks.cluster import ClusterUnavailable, ControlPlaneHandle

        try:
            ControlPlaneHandle()
        except ClusterUnavailable as exc:
            out["skipped"] = str(exc)
            return out
    if left_s < params["child_timeout"] / 3:
        out["skipped"] = f"time budget spent ({left_s:.0f} s left)"
        return out
    out["params"] = params = prepare(name, params, scratch, args.seed)
    order = list(sides.roots)
    if index % 2:
        order.reverse()
    for side in order:
        log(f"{name} ({side}) ...")
        out[side] = sides.run(side, name, params, scratch, min(params["child_timeout"], max(60.0, left_s)))
    for path in (params.get("dump"), params.get("big")):
        if path:
            Path(path).unlink(missing_ok=True)
    return out


__all__ = ["ROWS", "main"]

if __name__ == "__main__":
    sys.exit(main())
