"""`wmap describe -f`, `wmap validate`, `wmap catalog` as a user runs them (subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from tests.resolution.jobset_objects import RUNNING_STATUS, jobs_and_pods, jobset


def wmap(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "workload_map", *args], capture_output=True, text=True, input=stdin,
                          timeout=60, check=False)


def seed_file(tmp_path: Path) -> Path:
    jobs, pods = jobs_and_pods()
    path = tmp_path / "seed.yaml"
    path.write_text(yaml.safe_dump_all([jobset(status=RUNNING_STATUS), *jobs, *pods]))
    return path


def test_describe_tree_shows_roles_and_12_gpus(tmp_path: Path) -> None:
    result = wmap("describe", "-f", str(seed_file(tmp_path)))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.splitlines()[0].startswith("JobSet/train   namespace: ml")
    assert "|-- leader   1/1 ready   gpu: 4" in out and "`-- worker   2/2 ready   gpu: 8" in out
    assert "GPUs: requested by spec 12, requested by pods 12, allocated 12" in out
    assert "Phase: Running" in out


def test_describe_json_is_one_workload_superset_of_kli(tmp_path: Path) -> None:
    result = wmap("describe", "-f", str(seed_file(tmp_path)), "-o", "json")
    assert result.returncode == 0, result.stderr
    view = json.loads(result.stdout)
    for key in ("name", "namespace", "kind", "apiVersion", "createdAt", "definition", "origin", "phases", "resources",
                "components", "phase", "gpu"):
        assert key in view
    assert view["kind"] == "JobSet" and view["resources"]["gpus"] == 12
    assert [r["name"] for r in view["roles"]] == ["leader", "worker"]
    assert view["gpu"]["requestedByPods"] == 12 and view["replicas"]["desired"] == 3


def test_describe_garbage_fails_clearly(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: [unclosed\n")
    result = wmap("describe", "-f", str(bad))
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and "bad.yaml" in result.stderr
    notk8s = tmp_path / "plain.yaml"
    notk8s.write_text("hello: world\n")
    result = wmap("describe", "-f", str(notk8s))
    assert result.returncode == 2 and "apiVersion" in result.stderr
    missing = wmap("describe", "-f", str(tmp_path / "nope.yaml"))
    assert missing.returncode == 2 and "nope.yaml" in missing.stderr


def test_describe_with_extra_definition_file(tmp_path: Path) -> None:
    definition = tmp_path / "demo.yaml"
    definition.write_text(yaml.safe_dump({
        "apiVersion": "run.ai/v1alpha1", "kind": "Karta", "metadata": {"name": "demo"},
        "spec": {"structureDefinition": {"rootComponent": {
            "name": "demo", "kind": {"group": "example.com", "version": "v1", "kind": "Demo"},
            "specDefinition": {"podSpecPath": ".spec.pod"}, "scaleDefinition": {"replicasPath": ".spec.count"},
            "statusDefinition": {"phaseDefinition": {"path": ".status.state"},
                                 "statusMappings": {"running": [{"byPhase": "up"}]}}}}}}))
    workload = tmp_path / "w.yaml"
    workload.write_text(yaml.safe_dump({"apiVersion": "example.com/v1", "kind": "Demo",
                                        "metadata": {"name": "d", "namespace": "x"},
                                        "spec": {"count": "5", "pod": {"containers": [
                                            {"name": "c", "resources": {"limits": {"nvidia.com/gpu": 2}}}]}},
                                        "status": {"state": "up"}}))
    result = wmap("describe", "-f", str(workload), "--definition", str(definition), "-o", "json")
    assert result.returncode == 0, result.stderr
    view = json.loads(result.stdout)
    assert view["origin"] == "file" and view["phase"] == "Running"
    assert view["gpu"]["requestedBySpec"] == 10  # "5" replicas x 2 GPUs


def test_validate_reports_every_problem_and_exit_code(tmp_path: Path) -> None:
    path = tmp_path / "k.yaml"
    path.write_text(yaml.safe_dump({
        "apiVersion": "run.ai/v1alpha1", "kind": "Karta", "metadata": {"name": "broken"},
        "spec": {"structureDefinition": {
            "rootComponent": {"name": "r", "kind": {"group": "g.io", "version": "v1", "kind": "K"}},
            "childComponents": [{"name": "w", "ownerRef": "wrker",
                                 "specDefinition": {"podTemplateSpecPath": ".spec | del(.x)"}}]}}}))
    result = wmap("validate", str(path))
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0] == "INVALID: broken"
    assert '  spec.structureDefinition.childComponents[0].ownerRef: unknown component "wrker"' in lines
    assert any("root component must have status definition" in line for line in lines)
    assert any("del function is not allowed" in line for line in lines)
    assert lines[-1].startswith("3 finding(s)")
    ok = wmap("validate", "-", stdin=(Path(__file__).resolve().parents[2] / "catalog" /
                                      "jobset-x-k8s-io-jobset-v1alpha2.yaml").read_text())
    assert ok.returncode == 0 and ok.stdout.startswith("OK: jobset-x-k8s-io-jobset-v1alpha2")


def test_describe_reads_stdin_for_dash(tmp_path: Path) -> None:
    text = seed_file(tmp_path).read_text()
    result = wmap("describe", "-f", "-", "-o", "tree", stdin=text)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].startswith("JobSet/train   namespace: ml")
    # several '-' (and a file beside) share the one stdin text; the definition may come from stdin too
    both = wmap("describe", "-f", "-", "-f", "-", "-o", "json", stdin=text)
    assert both.returncode == 0 and json.loads(both.stdout)["name"] == "train"
    definition = (Path(__file__).resolve().parents[2] / "catalog" / "jobset-x-k8s-io-jobset-v1alpha2.yaml").read_text()
    mine = wmap("describe", "-f", str(seed_file(tmp_path)), "--definition", "-", "-o", "json",
                stdin=definition.replace("name: jobset-x-k8s-io-jobset-v1alpha2", "name: from-stdin", 1))
    assert mine.returncode == 0, mine.stderr
    assert (json.loads(mine.stdout)["definition"], json.loads(mine.stdout)["origin"]) == ("from-stdin", "file")


def test_describe_stdin_errors_name_stdin() -> None:
    bad = wmap("describe", "-f", "-", stdin="kind: [unclosed\n")
    assert bad.returncode == 2 and bad.stderr.startswith("error: <stdin>") and "Traceback" not in bad.stderr
    empty = wmap("describe", "-f", "-", stdin="")  # no object at all: a usage error, not "nothing covered"
    assert empty.returncode == 2 and empty.stderr == "error: no Kubernetes object in <stdin>\n"


def test_closed_stdout_exits_quietly(tmp_path: Path) -> None:
    # the reader of the pipe is gone before anything is written (`wmap ... | head` that already exited)
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run([sys.executable, "-m", "workload_map", "describe", "-f", str(seed_file(tmp_path)), "-o",
                               "json"], stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60, check=False)
    finally:
        os.close(write_end)
    assert proc.stderr == "" and proc.returncode == 141


def test_output_larger_than_the_pipe_cut_by_head(tmp_path: Path) -> None:
    many = []
    for index in range(100):  # 100 workloads: far more JSON than a pipe buffer (64 KiB) holds
        doc = jobset(status=RUNNING_STATUS)
        doc["metadata"].update(namespace=f"ns-{index}", uid=f"uid-{index}")
        many.append(doc)
    path = tmp_path / "many.yaml"
    path.write_text(yaml.safe_dump_all(many))
    result = subprocess.run(f"{sys.executable} -m workload_map describe -f {path} -o json | head -n 3",
                            shell=True, capture_output=True, text=True, timeout=120, check=False)
    assert len(result.stdout.splitlines()) == 3
    assert "Traceback" not in result.stderr and "BrokenPipeError" not in result.stderr, result.stderr


def test_catalog_table_shows_aliases() -> None:
    result = wmap("catalog")
    assert result.returncode == 0, result.stderr
    header, *rows = result.stdout.splitlines()
    assert header.split() == ["NAME", "GVK", "ALIASES", "SOURCE"]
    ray = next(r for r in rows if r.startswith("ray-io-raycluster-v1 "))
    assert "ray,raycluster" in ray.split()
    assert any("knative,knative-service,ksvc" in r.split() for r in rows)


def test_validate_runs_the_registration_trial(tmp_path: Path) -> None:
    # passes every static rule, but its phase expression never finishes: the server's
    # registration trial refuses it with 422, so validate says INVALID (exit 1) too
    path = tmp_path / "loops.yaml"
    path.write_text(yaml.safe_dump({
        "apiVersion": "run.ai/v1alpha1", "kind": "Karta", "metadata": {"name": "loops"},
        "spec": {"structureDefinition": {"rootComponent": {
            "name": "r", "kind": {"group": "example.com", "version": "v1", "kind": "Demo"},
            "statusDefinition": {"phaseDefinition": {"path": "def f: f; f"},
                                 "statusMappings": {"running": [{"byPhase": "up"}]}}}}}}))
    result = wmap("validate", str(path))
    assert result.returncode == 1, result.stdout
    lines = result.stdout.splitlines()
    assert lines[0] == "INVALID: loops"
    assert lines[1].startswith("  spec.structureDefinition.rootComponent.statusDefinition.phaseDefinition.path: "
                               "jq expression did not finish")
