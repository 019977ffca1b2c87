"""The JSON rows REST and ``wmap`` share (workload_map.service.rows), over the seed JobSet."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from workload_map.paths import default_catalog_dir
from workload_map.definitions.catalog import load_catalog
from workload_map.definitions.registry import DefinitionRegistry
from workload_map.kube.snapshot import SnapshotReader
from workload_map.service.workloads import WorkloadService
from workload_map.service.rows import definition_dict, phase_state, summary
from tests.resolution.jobset_objects import RUNNING_STATUS, jobs_and_pods, jobset


def test_summary_row_of_the_seed_jobset() -> None:
    jobs, pods = jobs_and_pods()
    registry = DefinitionRegistry(load_catalog(default_catalog_dir()))
    (view,) = WorkloadService(registry, SnapshotReader([jobset(status=RUNNING_STATUS), *jobs, *pods])).workloads()
    row = summary(view)
    assert (row["kind"], row["namespace"], row["name"], row["phase"]) == ("JobSet", "ml", "train", "Running")
    # leader 1 replica + worker 2 replicas, one pod each, 4 nvidia.com/gpu per pod: 3 x 4 = 12
    assert (row["gpu"]["requestedBySpec"], row["gpu"]["allocated"]) == (12, 12)
    assert phase_state(view) == {"phase": "Running", "phases": row["phases"]}
    entry = next(e for e in registry.entries() if e.definition.name == view.definition)
    shown = definition_dict(entry)
    assert {k: shown[k] for k in ("name", "group", "version", "kind", "origin", "shadowed")} == {
        "name": "jobset-x-k8s-io-jobset-v1alpha2", "group": "jobset.x-k8s.io", "version": "v1alpha2",
        "kind": "JobSet", "origin": "catalog", "shadowed": False}


def test_wmap_get_json_prints_the_same_rows(tmp_path: Path) -> None:
    jobs, pods = jobs_and_pods()
    objects = [jobset(status=RUNNING_STATUS), *jobs, *pods]
    path = tmp_path / "seed.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    result = subprocess.run([sys.executable, "-m", "workload_map", "get", "jobset", "-n", "ml", "--snapshot", str(path),
                             "-o", "json"], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    registry = DefinitionRegistry(load_catalog(default_catalog_dir()))
    (view,) = WorkloadService(registry, SnapshotReader(objects)).workloads()
    assert json.loads(result.stdout) == {"items": [summary(view)], "count": 1}
