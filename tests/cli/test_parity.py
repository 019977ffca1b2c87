"""CLI parity with upstream kli: definitions, machine errors, -o defaults, completion, pod limit, CPU/memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from workload_map.cli.main import main
from workload_map.cli.outputs import default_output
from workload_map.cli.quantities import cpu, memory
from decimal import Decimal

REPO = Path(__file__).resolve().parents[2]
JOBSETS = REPO / "tests" / "fixtures" / "objects" / "jobset-x-k8s-io-jobset-v1alpha2" / "running.yaml"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_definitions_table_filters_and_one_definition(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "definitions", "--offline", "--group", "jobset.x-k8s.io")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "KIND", "ORIGIN", "COMPONENTS"]
    assert lines[1].split()[:3] == ["jobset-x-k8s-io-jobset-v1alpha2", "JobSet.jobset.x-k8s.io", "catalog"]
    assert len(lines) == 2  # one JobSet definition in the catalog
    code, out, _ = run(capsys, "definitions", "--offline", "jobset-x-k8s-io-jobset-v1alpha2", "-o", "json")
    doc = json.loads(out)
    assert code == 0 and doc["kind"] == "Karta" and doc["metadata"]["name"] == "jobset-x-k8s-io-jobset-v1alpha2"
    code, out, _ = run(capsys, "definitions", "--offline", "core-pod-v1", "-o", "yaml")
    assert yaml.safe_load(out)["spec"]["structureDefinition"]["rootComponent"]["kind"]["kind"] == "Pod"
    code, out, _ = run(capsys, "definitions", "--offline", "--group", "", "--kind", "pod", "--version", "v1",
                       "-o", "json")
    assert [d["metadata"]["name"] for d in json.loads(out)["items"]] == ["core-pod-v1"]


def test_definitions_errors_are_json_objects_with_stable_codes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "definitions", "--offline", "nope", "-o", "json")
    assert (code, json.loads(out)["error"], err) == (3, "definition_not_found", "")
    code, out, _ = run(capsys, "definitions", "--offline", "--group", "x.example.com", "--kind", "Y", "-o", "json")
    assert (code, json.loads(out)["error"]) == (4, "no_definition_for_type")
    code, out, _ = run(capsys, "definitions", "--offline", "--kind", "Pod", "-o", "json")
    assert (code, json.loads(out)["error"]) == (2, "usage")
    code, out, err = run(capsys, "definitions", "--offline", "nope")
    assert code == 3 and out == "" and 'no Karta definition named "nope"' in err


def test_describe_uncovered_type_in_json_mode(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "describe", "-f", str(JOBSETS), "Widget/x", "-o", "json")
    body = json.loads(out)
    assert code == 4 and body["error"] == "no_definition_for_type" and body["type"] == "Widget"
    code, out, _ = run(capsys, "describe", "-f", str(JOBSETS), "Widget/x", "-o", "yaml")
    assert code == 4 and yaml.safe_load(out)["error"] == "no_definition_for_type"


def test_output_default_from_environment_and_config(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    env = {"WMAP_CONFIG": str(config)}
    assert default_output("get", env) == "table"
    assert default_output("get", {**env, "WMAP_OUTPUT": "json"}) == "json"
    assert default_output("describe", {**env, "WMAP_OUTPUT": "wide"}) == "tree"  # describe has no wide
    config.write_text("output: yaml\noutputs: {get: wide}\n")
    assert default_output("get", env) == "wide" and default_output("definitions", env) == "yaml"
    assert default_output("catalog", env) == "table"  # catalog offers no yaml
    config.write_text("outputs: {describe: table}\n")
    with pytest.raises(Exception, match="outputs.describe must be one of tree, json, yaml"):
        default_output("describe", env)


def test_environment_default_reaches_the_command(capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("WMAP_OUTPUT", "json")
    monkeypatch.setenv("WMAP_CONFIG", str(tmp_path / "none.yaml"))
    code, out, _ = run(capsys, "describe", "-f", str(JOBSETS), "JobSet/llm-pretrain")
    assert code == 0 and json.loads(out)["name"] == "llm-pretrain"


def test_tree_has_cpu_memory_and_pod_limit(capsys: pytest.CaptureFixture[str]) -> None:
    # running.yaml: leader x1 and worker x2, each pod 4 GPUs, cpu 16 and 128Gi (the fixture's
    # container requests): the worker component asks 2 x 16 = 32 cores and 256Gi
    code, out, _ = run(capsys, "describe", "-f", str(JOBSETS), "JobSet/llm-pretrain", "--pod-limit", "1")
    assert code == 0
    worker = next(line for line in out.splitlines() if line.lstrip("|` -").startswith("worker"))
    assert "gpu: 8" in worker and "cpu: 32, mem: 256Gi" in worker
    assert "... and 1 more (0 unhealthy shown)" in out  # 2 worker pods, limit 1, both healthy
    assert sum("cpu: 16, mem: 128Gi" in line and "Running" in line for line in out.splitlines()) == 2


def test_quantities() -> None:
    assert (cpu(Decimal("20")), cpu(Decimal("0.5")), cpu(Decimal("1.0001"))) == ("20", "500m", "1001m")
    assert (memory(Decimal(2**31)), memory(Decimal(500 * 10**6)), memory(Decimal(1234))) == ("2Gi", "500M", "1234")


def test_completion_scripts_and_answers(tmp_path: Path) -> None:
    wmap = [sys.executable, "-m", "workload_map"]
    for shell, marker in (("bash", "complete"), ("zsh", "compdef"), ("fish", "complete")):
        out = subprocess.run([*wmap, "completion", shell], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0 and marker in out.stdout and "wmap" in out.stdout
    answers = tmp_path / "answers"
    env = {**os.environ, "_ARGCOMPLETE": "1", "_ARGCOMPLETE_IFS": "\n", "COMP_LINE": "wmap get pytorch",
           "COMP_POINT": "16", "_ARGCOMPLETE_STDOUT_FILENAME": str(answers), "KUBECONFIG": str(tmp_path / "none")}
    subprocess.run(wmap, env=env, capture_output=True, timeout=60)
    got = answers.read_text().split("\n")
    assert {"pytorchjob", "pytorchjobs", "pytorchjob.kubeflow.org"} <= set(got)
    env.update(COMP_LINE="wmap defi", COMP_POINT="9")
    subprocess.run(wmap, env=env, capture_output=True, timeout=60)
    assert [a.strip() for a in answers.read_text().split("\n")] == ["definitions"]  # a single match ends with a space
