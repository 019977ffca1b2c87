"""``python -m benchmarks.targets``: a small run through its child processes, and the verdicts.

No timing assertion: the run's figures are checked for shape and for the values fixed by
its inputs (workloads generated, changes applied); the verdict logic on figures written
by hand.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmarks.target_rows import ROWS, render, verdicts
from benchmarks.targets import parse_args

REPO = Path(__file__).resolve().parents[2]


def test_the_cli_figures_run_wmap_and_read_their_runs(tmp_path: Path) -> None:
    """The cli figures over the small file as both the small and the "big" file: three wmap runs, exit 0."""
    from benchmarks import startup
    from benchmarks.target_figures import cli, cli_big

    figures = cli({"repeats": 1})
    assert figures["repeats"] == 1 and figures["small_file"] == startup.SMALL_FILE.name
    assert figures["small_wall_median_s"] > 0 and figures["small_cpu_median_s"] > 0
    big = cli_big({"big": str(startup.SMALL_FILE), "timeout": 120})
    assert big["big_exit"] == 0, big.get("big_error")
    assert big["big_peak_rss_bytes"] > 0


def test_small_run_after_only(tmp_path: Path) -> None:
    out = tmp_path / "targets.json"
    proc = subprocess.run([sys.executable, "-m", "benchmarks.targets", "--quick", "--before", "none",
                           "--skip-cluster", "--only", "warm,churn,live", "--output", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    warm = doc["figures"]["warm"]["after"]
    assert "error" not in warm, warm
    assert warm["figures"]["workloads_listed"] == 500  # --quick size of the warm figure
    assert warm["figures"]["cold_service_pass"]["workloads"] == 500
    assert "before" not in doc["figures"]["warm"]
    churn = doc["figures"]["churn"]["after"]["figures"]
    assert churn["changes"] == 3000 and churn["relevant"] == 1500  # 1,000/s for 3 s, every other change relevant
    assert churn["marked_nothing"] > 0
    assert doc["figures"]["live"] == {"params": doc["figures"]["live"]["params"], "skipped": "--skip-cluster"}
    rows = {r["target"]: r for r in doc["targets"]}
    assert len(rows) == len(ROWS)
    assert rows["warm one workload p99"]["after"] == warm["figures"]["one_workload_ms"]["p99"]
    assert rows["warm one workload p99"]["size"] == "500 workloads"
    assert rows["relist after API server restart / raw list"]["notes"] == ["skipped: --skip-cluster"]
    assert rows["describe -f big file, peak RSS"]["notes"] == ["not run"]
    assert "QUICK: every size reduced" in proc.stdout and "targets:" in proc.stdout


def _doc(figures: dict) -> dict:
    return {"machine": {"date": "d", "cpu_model": "c", "cores": 2, "python": "3.11", "load_average_start": [1, 1, 1]},
            "quick": False, "before": "abc", "figures": figures}


def test_verdicts_judge_after_and_keep_before() -> None:
    side = {"load_end": [3.5, 2, 1]}
    doc = _doc({
        "warm": {"params": {"workloads": 20000},
                 "before": {**side, "figures": {"one_workload_ms": {"p99": 9.0},
                                                "cold_service_pass": {"workloads_per_s": 600}}},
                 "after": {**side, "figures": {"one_workload_ms": {"p99": 2.5},
                                               "cold_service_pass": {"workloads_per_s": 4999}}}},
        "cli_big": {"params": {"big_workloads": 10000},
                "before": {**side, "error": "TimeoutExpired: boom"},
                "after": {**side, "figures": {"big_peak_rss_bytes": 300_000_000}}},
    })
    rows = {r["target"]: r for r in verdicts(doc)}
    one = rows["warm one workload p99"]
    assert (one["before"], one["after"], one["met"], one["size"]) == (9.0, 2.5, True, "20,000 workloads")
    assert one["load_before"] == one["load_after"] == "3.5"
    cold = rows["cold resolution, 2 workers (lifespan start to every view)"]
    assert cold["met"] is False  # 4,999 < 5,000 workloads/s
    rss = rows["describe -f big file, peak RSS"]
    assert (rss["before"], rss["after"], rss["met"]) == (None, 300.0, False)  # 300 MB > 250 MB
    assert rss["notes"] == ["before failed: TimeoutExpired: boom"]
    assert rows["ready / parse floor, snapshot"]["met"] is None
    text = render({**doc, "targets": list(rows.values())})
    assert "NOT met" in text and "before failed: TimeoutExpired: boom" in text


def test_only_rejects_unknown_figures() -> None:
    import pytest

    with pytest.raises(SystemExit):
        parse_args(["--only", "warm,bogus"])
    assert parse_args(["--only", "warm, cli"]).figures == ["warm", "cli", "cli_big"]  # cli: both describe -f figures
    assert parse_args(["--only", "cli_big"]).figures == ["cli_big"]


def _burst(achieved: float, patch_median_ms: float, failures: int = 0, p99: float = 10.0) -> dict[str, object]:
    return {"achieved_rate_per_s": achieved, "patch_failures": failures,
            "patch_round_trip_ms": {"median": patch_median_ms}, "update_to_subscriber_ms": {"p99": p99}}


def test_sustained_rate_is_the_last_rate_before_a_queue_or_a_shortfall() -> None:
    from benchmarks.cluster import sustained_rate

    # 50 and 100/s answered in about 5 ms; 150/s median 14 ms is within 3 x 5; 200/s at 150 ms queues
    bursts = {200.0: _burst(185.3, 150.0), 50.0: _burst(50.0, 5.0), 150.0: _burst(149.0, 14.0),
              100.0: _burst(100.0, 4.2)}
    assert sustained_rate(bursts) == 150.0
    bursts[150.0] = _burst(140.0, 6.0)  # 140 < 95 % of 150: a shortfall, whatever the round trip
    assert sustained_rate(bursts) == 100.0
    bursts[100.0] = _burst(100.0, 4.2, failures=1)  # a failed PATCH: not sustained, and 150/s is not looked at
    assert sustained_rate(bursts) == 50.0
    assert sustained_rate({50.0: {"skipped": "the patcher process sent nothing"}}) is None


def test_the_live_churn_row_reads_the_burst_at_the_sustained_rate() -> None:
    side = {"load_end": [1.7, 1, 1]}
    sweep = {"50": _burst(50, 5, p99=19.3), "100": _burst(100, 4.2, p99=15.4), "200": _burst(185.3, 150, p99=431.8)}
    after = {"update_to_phase": {**sweep["200"], "sweep": sweep, "sustained_rate_per_s": 100.0,
                                 "at_sustained": sweep["100"]}}
    doc = _doc({"live": {"params": {"pods": 20000, "sweep": [50, 100, 200]},
                         "after": {**side, "figures": after}}})
    row = next(r for r in verdicts(doc) if r["target"].startswith("churn live"))
    assert (row["after"], row["met"], row["size"]) == (15.4, True, "20,000 pods, of 50/100/200/s")
    text = render({**doc, "targets": [row]})
    assert "sustained updates/s 100.0" in text and "subscriber p99 ms at 200/s 431.8" in text
