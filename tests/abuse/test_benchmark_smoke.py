"""``python -m benchmarks.hostile`` runs end to end and prints both figures (no timing
assertions: the figures are printed, not judged, here)."""

from __future__ import annotations

import subprocess
import sys

from tests.abuse.server import REPO


def test_hostile_benchmark_prints_both_phases() -> None:
    done = subprocess.run([sys.executable, "-m", "benchmarks.hostile", "--seconds", "1"], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    lines = [line for line in lines if "/livez" in line]
    assert [line.split("/livez")[0].strip() for line in lines] == ["fragment attack", "200 concurrent page queries"]
    assert all("p99=" in line and "answers={" in line for line in lines)
    # the bombs are refused inside a 200 answer (GraphQL errors), never a 5xx
    assert "answers={200:" in lines[0]
