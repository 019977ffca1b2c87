"""Smoke tests of ``python -m benchmarks``: a tiny run and the JSON shape (no timing assertions).

Also checks the synthetic-cluster generator: every catalog type it builds resolves with
every pod attributed and no resolution error (objects and pods passed as the catalog tests
pass them), and the API-server create bodies it derives.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.cluster import _sanitize
from benchmarks.generator import TYPES, generate
from benchmarks.stats import percentile, summarize
from workload_map.paths import default_catalog_dir
from workload_map.definitions.catalog import load_catalog
from workload_map.gvk import GVK
from workload_map.resolution import resolve

REPO = Path(__file__).resolve().parents[2]


def _summary_shape(fig: dict) -> None:
    assert set(fig) >= {"median", "p99", "min", "max", "n", "unit"}
    assert fig["n"] >= 1
    assert fig["median"] is None or fig["median"] >= 0


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str]:
    out = tmp_path_factory.mktemp("bench") / "latest.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--skip-cluster", "--sizes", "12,25", "--sample", "40",
         "--skip-targets", "--output", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(out.read_text()), proc.stdout


def test_tiny_run_json_shape(tiny_run: tuple[dict, str]) -> None:
    doc, _ = tiny_run
    m = doc["machine"]
    assert {"cpu_model", "cores", "python", "date", "load_average_start", "load_average_end"} <= set(m)
    res = doc["resolution"]
    assert res["sample_workloads"] == 40
    for key in ("with_fast_path", "without_fast_path"):
        _summary_shape(res[key]["workloads_per_s"])
        _summary_shape(res[key]["pods_per_s"])
    assert 0 <= res["jq_share"]["jq_pct"] <= 100
    assert set(res["jq_share"]["jq_breakdown_pct"]) == {"c_jq_program", "json_serialization_for_jq",
                                                        "fast_path_python"}
    assert res["profile"]["by_own_time"]
    assert set(doc["sizes"]) == {"12", "25"}
    for size, figs in doc["sizes"].items():
        q = figs["queries"]
        assert q["workloads_listed"] == int(size)
        assert q["cold_service_pass"]["workloads"] == int(size)
        for key in ("one_workload_ms", "page_of_100_ms", "gpu_summary_ms"):
            _summary_shape(q[key])
        assert q["resolutions_during_warm_queries"] == 0  # warm means memoized
        assert figs["load"]["pods"] > 0
    mem = doc["memory"]
    assert mem["workloads"] == 40 and mem["pods"] > 0
    for key in ("bytes_per_pod", "bytes_per_workload_objects", "bytes_per_workload_total",
                "bytes_per_memoized_view"):
        assert mem[key] > 0
    assert doc["cluster"] == {"skipped": "--skip-cluster"}
    labels = {t["target"] for t in doc["targets"]}
    assert {"one-workload query p99", "page of 100 p99", "cold resolution, one core (median)",
            "bytes per cached pod"} <= labels
    assert all(t["met"] in (True, False) for t in doc["targets"])
    assert doc["attribution_check"]["workloads_not_listed"] == 0
    views = doc["views"]  # the largest size (25) plus the 500 objects of the bench kind
    assert views["workloads"] == 25 + 500
    for key in ("livez_cold_ms", "livez_loop_ms", "gpu_summary_after_change_ms", "change_to_phase_ms"):
        _summary_shape(views[key])
    assert views["change_to_phase_ms"]["missed"] == 0 and views["livez_loop_ms"]["timeouts"] >= 1
    assert views["ipc"]["workloads"] == 25 and views["ipc"]["job_bytes"] > 0


def test_tiny_run_prints_table(tiny_run: tuple[dict, str]) -> None:
    _, stdout = tiny_run
    assert "figure" in stdout and "target" in stdout
    assert "cold resolution" in stdout and "warm: page of 100" in stdout
    assert "targets:" in stdout and "JSON:" in stdout
    assert "materialized views" in stdout and "change -> new phase on the feed" in stdout


def test_generator_pods_attribute_for_every_type() -> None:
    catalog = load_catalog(default_catalog_dir())
    cluster = generate(len(TYPES) * 4, seed=3)
    seen = set()
    for wl in cluster.workloads():
        seen.add(wl.spec.type)
        entry = catalog.get(GVK.of(wl.root))
        assert entry is not None, wl.spec.type
        others = [o for o in wl.objects if o is not wl.root]
        pods = [o for o in others if o["kind"] == "Pod"]
        view = resolve(entry.definition, wl.root, objects=others, pods=pods)
        errors = [e.message for e in view.errors] + [e.message for c in view.all_components() for e in c.errors]
        assert not errors, (wl.spec.type, errors)
        assert not view.unattributed, (wl.spec.type, [p.unattributed_reason for p in view.unattributed])
        assert len(view.all_pods()) == len(wl.pods), wl.spec.type
    assert seen == {t.key for t in TYPES}


def test_generator_is_deterministic_and_sized() -> None:
    a, b = generate(60, seed=9), generate(60, seed=9)
    assert [w.objects for w in a.workloads()] == [w.objects for w in b.workloads()]
    pods = sum(len(w.pods) for w in a.workloads())
    assert 4 * 60 <= pods <= 20 * 60
    assert len({(s.namespace, s.name) for s in a.specs}) == 60


def test_sanitize_for_create() -> None:
    cluster = generate(40, seed=2, types=("job",))
    wl = next(w for w in cluster.workloads() if w.pods)
    job, pod = wl.objects[0], wl.pods[0]
    uids = {job["metadata"]["uid"]: "new-uid"}
    body = _sanitize(job, {})
    assert "status" not in body and "uid" not in body["metadata"] and "selector" not in body["spec"]
    assert "controller-uid" not in body["spec"]["template"]["metadata"]["labels"]
    pod_body = _sanitize(pod, uids)
    assert pod_body["metadata"]["ownerReferences"][0]["uid"] == "new-uid"
    assert pod_body["metadata"]["labels"]["controller-uid"] == "new-uid"


def test_stats() -> None:
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile([5], 99) == 5
    s = summarize([1.0, 2.0, 3.0], "ms")
    assert (s.median, s.min, s.max, s.n) == (2.0, 1.0, 3.0, 3)
