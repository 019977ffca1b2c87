"""kubectl conventions of ``wmap``: AGE, ``-l``, ``-o name|wide|yaml``, default namespace,
``describe TYPE NAME``, ``validate`` of several paths, ``--version`` and the exit codes
5 (cluster unreachable) and 6 (``serve`` did not start)."""

from __future__ import annotations

import copy
import json
import socket
import subprocess
import sys
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml

from workload_map.cli.kubectl import default_namespace, human_duration, matches, parse_selector
from workload_map.cli.main import main
from workload_map.cli.render import age
from workload_map.errors import InvalidRequest
from tests.resolution.jobset_objects import RUNNING_STATUS, jobs_and_pods, jobset

REPO = Path(__file__).parents[2]


@pytest.mark.parametrize(("seconds", "shown"), [
    (-5, "<invalid>"), (-1, "0s"), (0, "0s"), (45, "45s"), (119, "119s"),  # seconds under 2 minutes
    (120, "2m"), (310, "5m10s"), (599, "9m59s"),  # minutes and seconds under 10 minutes
    (600, "10m"), (125 * 60, "125m"), (3 * 3600 - 1, "179m"),  # minutes under 3 hours
    (3 * 3600, "3h"), (3 * 3600 + 5 * 60, "3h5m"), (8 * 3600 - 1, "7h59m"),  # hours and minutes under 8 h
    (8 * 3600, "8h"), (47 * 3600 + 59 * 60, "47h"),  # hours under 48 h
    (48 * 3600, "2d"), (3 * 86400 + 4 * 3600, "3d4h"),  # days and hours under 8 days
    (8 * 86400, "8d"), (729 * 86400, "729d"),  # days under 2 years
    (730 * 86400, "2y"), (740 * 86400, "2y10d"),  # years and days under 8 years
    (8 * 365 * 86400, "8y"), (20 * 365 * 86400 + 86400, "20y"),
])
def test_human_duration_is_kubectl_age(seconds: int, shown: str) -> None:
    assert human_duration(seconds) == shown


def test_age_of_a_creation_timestamp() -> None:
    now = datetime(2026, 11, 29, 13, 5, 30, tzinfo=timezone.utc)
    assert age("2026-11-29T10:00:00Z", now) == "3h5m"  # 3 h 5 min 30 s: hours and minutes under 8 h
    assert age("2026-11-29T13:00:20Z", now) == "5m10s"
    assert age(None, now) == "<unknown>" and age("yesterday", now) == "<unknown>"


@pytest.mark.parametrize(("selector", "labels", "expected"), [
    ("team=a", {"team": "a"}, True), ("team==a", {"team": "b"}, False),
    ("team!=a", {}, True),  # != matches objects without the label (Kubernetes labels doc)
    ("team=a,tier!=gold", {"team": "a", "tier": "gold"}, False),
    ("team in (a, b)", {"team": "b"}, True), ("team notin (a,b)", {"team": "c"}, True),
    ("team notin (a,b)", {}, True), ("team in (a,b),x", {"team": "a"}, False),
    ("app.kubernetes.io/name", {"app.kubernetes.io/name": "x"}, True), ("!team", {"team": "a"}, False),
    ("", {}, True),
])
def test_label_selector(selector: str, labels: dict[str, str], expected: bool) -> None:
    assert matches(parse_selector(selector), labels) is expected


def test_bad_selector_names_the_flag() -> None:
    with pytest.raises(InvalidRequest, match=r"-l/--selector: invalid requirement 'a b=c'"):
        parse_selector("a b=c")


def kubeconfig(path: Path, server: str = "https://127.0.0.1:1") -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "team",
        "clusters": [{"name": "k", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "team", "context": {"cluster": "k", "user": "u", "namespace": "team-a"}},
                     {"name": "bare", "context": {"cluster": "k", "user": "u"}}]}))
    return path


def test_default_namespace_is_the_context_namespace(tmp_path: Path) -> None:
    config = kubeconfig(tmp_path / "config")
    env = {"KUBECONFIG": f"{tmp_path / 'missing'}:{config}"}
    assert default_namespace(environ=env, sa_dir=tmp_path) == "team-a"
    assert default_namespace(context="bare", environ=env, sa_dir=tmp_path) == "default"
    assert default_namespace(environ={}, sa_dir=tmp_path) == "default"  # no kubeconfig, not in a pod
    (tmp_path / "token").write_text("t")
    (tmp_path / "ca.crt").write_text("c")
    (tmp_path / "namespace").write_text("in-pod\n")
    in_pod = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    assert default_namespace(environ=in_pod, sa_dir=tmp_path) == "in-pod"


@pytest.fixture
def two_jobsets(tmp_path: Path) -> Path:
    """train (ml, team=a, 3 ready pods on gpu-node-1) and eval (other, team=b, no pods)."""
    train = jobset(status=RUNNING_STATUS)
    train["metadata"]["labels"] = {"team": "a"}
    evaluation = copy.deepcopy(jobset())
    evaluation["metadata"].update(name="eval", namespace="other", uid="uid-eval", labels={"team": "b"},
                                  creationTimestamp="2026-11-30T10:00:00Z")
    jobs, pods = jobs_and_pods()
    path = tmp_path / "two.yaml"
    path.write_text(yaml.safe_dump_all([train, evaluation, *jobs, *pods]))
    return path


def get(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_get_selector_and_outputs(two_jobsets: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snap = ["--snapshot", str(two_jobsets)]
    # files without -n: every namespace, in kubectl's order (namespace, then name): ml/train
    # before other/eval, although eval was created a day later
    assert get(capsys, "get", "jobset", *snap, "-o", "name")[:2] == (
        0, "jobset.jobset.x-k8s.io/train\njobset.jobset.x-k8s.io/eval\n")
    assert get(capsys, "get", "jobset", *snap, "-l", "team=a", "-o", "name")[1] == "jobset.jobset.x-k8s.io/train\n"
    assert get(capsys, "get", "jobset", *snap, "-l", "team in (a,b)", "-o", "name")[1].count("\n") == 2
    assert get(capsys, "get", "jobset", *snap, "-l", "team notin (a),!gone", "-o", "name")[1] == (
        "jobset.jobset.x-k8s.io/eval\n")
    assert get(capsys, "get", "jobset", *snap, "-l", "team=c", "-o", "yaml")[1] == "items: []\ncount: 0\n"
    assert get(capsys, "get", "jobset", *snap, "-n", "ml", "-o", "name")[1] == "jobset.jobset.x-k8s.io/train\n"
    code, out, _ = get(capsys, "get", "jobset", *snap, "-o", "wide", "-l", "team=a")
    header, row = out.splitlines()
    assert header.split() == ["NAME", "NAMESPACE", "PHASE", "GPUS", "AGE", "DEFINITION", "PODS", "NODES"]
    # 3 pods x 4 GPUs bound to gpu-node-1 = 12 allocated of 12 in the spec (leader 1x4 + worker 2x4)
    cells = row.split()
    assert cells[:4] == ["train", "ml", "Running", "12/12"]
    assert cells[5:] == ["jobset-x-k8s-io-jobset-v1alpha2", "3/3", "gpu-node-1"]
    code, out, _ = get(capsys, "get", "jobset", *snap, "-o", "yaml", "-l", "team=b")
    data = yaml.safe_load(out)
    assert code == 0 and data["count"] == 1 and data["items"][0]["gpu"]["requestedBySpec"] == 12
    assert data["items"][0]["gpu"]["allocated"] == 0  # eval has no pods
    assert get(capsys, "get", "jobset", *snap, "-l", "a b")[0] == 2


def test_describe_type_name_agrees_with_get_on_namespaces(two_jobsets: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    snap = ["--snapshot", str(two_jobsets)]
    code, out, err = get(capsys, "describe", "jobset", "eval", *snap, "-o", "json")
    assert code == 0, err
    assert json.loads(out)["namespace"] == "other"  # found without -n, as get lists every namespace
    code, out, _ = get(capsys, "describe", "jobset", "train", *snap)
    assert code == 0 and out.startswith("JobSet/train   namespace: ml")
    assert get(capsys, "describe", "jobset", "eval", "-n", "ml", *snap)[0] == 3
    assert get(capsys, "describe", "jobset/eval", "eval", *snap)[0] == 2
    code, out, _ = get(capsys, "describe", "-f", str(two_jobsets), "-n", "other", "-o", "json")
    assert code == 0 and json.loads(out)["name"] == "eval"  # one view: a bare object
    code, out, _ = get(capsys, "describe", "-f", str(two_jobsets), "jobset", "train", "-o", "json")
    assert code == 0 and json.loads(out)["namespace"] == "ml"  # -f with TYPE NAME keeps that workload
    assert get(capsys, "describe", "-f", str(two_jobsets), "jobset/nope")[0] == 3
    assert get(capsys, "describe", "-f", str(two_jobsets), "rayjob")[0] == 3  # covered type, none in the files


def wmap(*args: str, exe: str = "wmap") -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(Path(sys.executable).parent / exe), *args], capture_output=True, text=True,
                          timeout=60, check=False)


def test_version_of_wmap_and_the_kubectl_plugin() -> None:
    assert wmap("--version").stdout == f"wmap {version('workload-map-server')}\n"
    assert wmap("--version", exe="kubectl-wmap").stdout.startswith("kubectl wmap ")


def test_validate_reports_each_file_of_directories(tmp_path: Path) -> None:
    good = (REPO / "catalog" / "jobset-x-k8s-io-jobset-v1alpha2.yaml").read_text()
    (tmp_path / "defs").mkdir()
    (tmp_path / "defs" / "a.yaml").write_text(good)
    (tmp_path / "defs" / "notes.txt").write_text("not a definition")  # skipped: not .yaml/.yml/.json
    broken = yaml.safe_load(good)
    broken["metadata"]["name"] = "broken"
    del broken["spec"]["structureDefinition"]["rootComponent"]["kind"]
    (tmp_path / "b.yml").write_text(yaml.safe_dump(broken))
    result = wmap("validate", str(tmp_path / "defs"), str(tmp_path / "b.yml"))
    assert result.returncode == 1
    assert result.stdout.startswith("OK: jobset-x-k8s-io-jobset-v1alpha2 is a valid Karta definition")
    assert "a.yaml" in result.stdout.splitlines()[0] and "INVALID: broken" in result.stdout
    assert wmap("validate", str(tmp_path / "defs")).returncode == 0
    missing = wmap("validate", str(tmp_path / "defs"), str(tmp_path / "nope.yaml"))
    assert missing.returncode == 2 and "nope.yaml" in missing.stderr and missing.stdout.startswith("OK: ")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_cluster_exits_5_at_once(tmp_path: Path) -> None:
    config = kubeconfig(tmp_path / "config", server=f"https://127.0.0.1:{free_port()}")  # nothing listens
    for argv in (["get", "jobset"], ["describe", "jobset", "train"]):
        result = wmap(*argv, "--kubeconfig", str(config))
        assert result.returncode == 5, result.stderr
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: cannot reach the API server")
        assert result.stdout == ""


def test_serve_start_up_failure_exits_6_with_one_line(tmp_path: Path) -> None:
    result = wmap("serve", "--snapshot", str(tmp_path / "nope.yaml"), "--port", str(free_port()))
    assert result.returncode == 6
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines()[-1].startswith("error: wmap serve did not start: SnapshotError: ")


def test_serve_names_the_yaml_problem_of_a_malformed_snapshot(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: [unclosed\n")
    result = wmap("serve", "--snapshot", str(bad), "--port", str(free_port()))
    assert result.returncode == 6 and "Traceback" not in result.stderr
    last = result.stderr.splitlines()[-1]
    # the problem and its place, not only a line and column
    assert last.startswith(f"error: wmap serve did not start: SnapshotError: {bad}: not valid YAML at line 4 column 1: ")
    assert "expected ',' or ']'" in last


def test_serve_on_a_port_in_use_fails_before_loading_anything(tmp_path: Path) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        # a snapshot that does not exist: had loading started, this would be the reported error
        result = wmap("serve", "--snapshot", str(tmp_path / "nope.yaml"), "--port", str(port))
    assert result.returncode == 6
    assert result.stderr.splitlines()[-1] == f"error: wmap serve did not start: cannot listen on 127.0.0.1:{port}: " \
                                             "Address already in use"


def test_a_kind_read_in_another_version_is_no_crd_warning() -> None:
    from workload_map.cli.live import unread_kind_warnings
    from workload_map.gvk import GVK
    from workload_map.kube.reader import InformerStatus

    states = [InformerStatus(GVK("nvidia.com", "v1alpha1", "DynamoGraphDeployment"), "crd_missing"),
              InformerStatus(GVK("nvidia.com", "v1beta1", "DynamoGraphDeployment"), "synced", has_synced=True),
              InformerStatus(GVK("ray.io", "v1", "RayJob"), "crd_missing"),
              InformerStatus(GVK("", "v1", "Pod"), "forbidden")]
    # the cluster serves DynamoGraphDeployment v1beta1: the catalog's v1alpha1 is no warning
    assert unread_kind_warnings(states) == ["warning: RayJob.ray.io v1: crd_missing", "warning: Pod.core v1: forbidden"]
