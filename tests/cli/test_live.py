"""``wmap get`` / ``wmap describe KIND/NAME`` over a snapshot, and ``wmap serve`` as a subprocess."""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from workload_map.cli import inputs as cli_inputs
from workload_map.cli import main as cli_main
from workload_map.cli.live import serve_settings
from workload_map.cli.main import main

FIXTURE = str(Path(__file__).parents[1] / "api" / "fixtures" / "jobset.yaml")
REPO = Path(__file__).parents[2]


def test_get_table_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["get", "jobset", "--snapshot", FIXTURE]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["NAME", "NAMESPACE", "PHASE", "GPUS", "AGE"]
    assert out[1].split()[:4] == ["train", "ml", "Initializing", "8/12"]
    assert main(["get", "JobSet", "--snapshot", FIXTURE, "-o", "json", "--phase", "Running,Completed"]) == 0
    assert json.loads(capsys.readouterr().out) == {"items": [], "count": 0}
    assert main(["get", "jobsets", "-n", "ml", "--snapshot", FIXTURE, "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["items"][0]["gpu"]["requestedBySpec"] == 12


def test_describe_json_matches_the_rest_document(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["describe", "JobSet/train", "-n", "ml", "--snapshot", FIXTURE, "-o", "json"]) == 0
    view = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in view["roles"]] == ["leader", "worker"]
    assert view["gpu"] == {"requestedBySpec": 12, "requestedByPods": 12, "allocated": 8,
                           "byResource": {"nvidia.com/gpu": {"requestedBySpec": 12, "requestedByPods": 12,
                                                             "allocated": 8}}}


@pytest.mark.parametrize(("argv", "code", "message"), [
    (["describe", "JobSet/nope", "-n", "ml"], 3, "not found"),
    (["describe", "JobSet", "-n", "ml"], 2, "NAME is required"),
    (["get", "frobnicator"], 4, "no Karta definition covers"),
])
def test_exit_codes(argv: list[str], code: int, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*argv, "--snapshot", FIXTURE]) == code
    assert message in capsys.readouterr().err


def test_unknown_phase_is_a_usage_error_listing_the_phases(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["get", "jobset", "--phase", "Bogus", "--snapshot", FIXTURE]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "'bogus'" in err
    for phase in ("Initializing", "Running", "Completed", "Failed", "Degraded", "Suspended", "Suspending",
                  "Resuming", "Undefined"):
        assert phase in err
    assert main(["get", "jobset", "--phase", "running,Bogus", "--snapshot", FIXTURE]) == 2
    assert main(["get", "jobset", "--phase", "INITIALIZING", "--snapshot", FIXTURE, "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["count"] == 1


@pytest.mark.parametrize(("alias", "kind"), [("ray", "RayCluster"), ("ksvc", "Service"), ("deploy", "Deployment"),
                                             ("isvc", "InferenceService"), ("jobset", "JobSet")])
def test_get_accepts_catalog_aliases(alias: str, kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["get", alias, "--snapshot", FIXTURE, "-o", "json"]) == 0, capsys.readouterr().err
    assert json.loads(capsys.readouterr().out)["count"] == (1 if kind == "JobSet" else 0)


def test_alias_resolves_to_the_registered_definition_when_one_wins(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    karta = yaml.safe_load((REPO / "catalog" / "apps-deployment-v1.yaml").read_text())
    karta["metadata"] = {"name": "team-deployment"}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "ml"},
                  "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c"}]}}}}
    snapshot = tmp_path / "with-karta.yaml"
    snapshot.write_text(yaml.safe_dump_all([karta, deployment]))
    # "deploy" is only an alias (no kind, plural or definition has that name): the Karta in force wins
    assert main(["describe", "deploy/web", "-n", "ml", "--snapshot", str(snapshot), "-o", "json"]) == 0
    view = json.loads(capsys.readouterr().out)
    assert (view["kind"], view["definition"], view["origin"]) == ("Deployment", "team-deployment", "cluster")
    assert main(["get", "deploy", "-n", "ml", "--snapshot", str(snapshot), "-o", "json"]) == 0
    assert [w["definition"] for w in json.loads(capsys.readouterr().out)["items"]] == ["team-deployment"]


def test_snapshot_dash_reads_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cli_inputs, "_stdin_text", None)
    monkeypatch.setattr(sys, "stdin", io.StringIO(Path(FIXTURE).read_text()))
    assert main(["get", "jobset", "--snapshot", "-", "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["count"] == 1
    assert main(["describe", "JobSet/train", "-n", "ml", "--snapshot", "-", "-o", "json"]) == 0  # stdin read once
    assert json.loads(capsys.readouterr().out)["name"] == "train"
    settings = serve_settings(cli_main.parser().parse_args(["serve", "--snapshot", "-", "--snapshot", FIXTURE]))
    stdin_copy, fixture = settings.kube.snapshot
    assert fixture == FIXTURE and Path(stdin_copy).read_text() == Path(FIXTURE).read_text()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(tmp_path: Path, *extra: str, launcher: tuple[str, ...] = ("-m", "workload_map")
           ) -> tuple[subprocess.Popen[str], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WMAP_") and k not in ("KUBECONFIG",
                                                                                           "KUBERNETES_SERVICE_HOST")}
    env["HOME"] = str(tmp_path)  # no ~/.kube/config: no cluster configured
    port = _free_port()
    proc = subprocess.Popen([sys.executable, *launcher, "serve", "--host", "127.0.0.1", "--port", str(port),
                             "--state-dir", str(tmp_path / "state"), "--log-format", "json", *extra],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"wmap serve exited {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}")
        try:
            if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                return proc, base
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise AssertionError("wmap serve did not become ready within 30 s")


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate(timeout=5)
    return err


def test_serve_answers_graphql_over_the_bundled_sample(tmp_path: Path) -> None:
    proc, base = _serve(tmp_path)
    try:
        response = httpx.post(f"{base}/graphql", json={"query": "{ workloads { totalCount nodes { origin } } }"},
                              timeout=10)
        assert response.status_code == 200 and "errors" not in response.json()
        count = response.json()["data"]["workloads"]["totalCount"]
        if (REPO / "server" / "workload_map" / "sample").is_dir():
            assert count >= 1
        assert httpx.get(f"{base}/livez", timeout=5).text == "ok"
    finally:
        err = _stop(proc)
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert any("bundled sample" in line["message"] for line in lines), err
    # uvicorn raises the signal again after a clean shutdown: the console entry reports it as
    # 128 + SIGINT without a traceback (cli.main.run)
    assert proc.returncode == 128 + signal.SIGINT and "Traceback" not in err


# ``wmap serve`` whose view freezer swallows every cancellation, its stop bound cut to 0.5 s
STUBBORN_FREEZER = """
import asyncio, sys
import workload_map.app as app

async def stubborn(service, **_):
    while True:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            pass

app.FOLLOW_STOP_S, app.freeze_when_settled = 0.5, stubborn
from workload_map.cli.entry import run
run()
"""


def test_serve_exits_on_sigterm_though_a_background_task_swallows_every_cancellation(tmp_path: Path) -> None:
    # the stop logged it and went on, then asyncio.run's own last wait for every task held the
    # process until a second signal (found by a fresh-user trial)
    proc, _ = _serve(tmp_path, launcher=("-c", STUBBORN_FREEZER))
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=5)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "background task wmap-freeze-views did not stop within 0.5 s" in err and "Traceback" not in err


def test_serve_a_user_snapshot(tmp_path: Path) -> None:
    proc, base = _serve(tmp_path, "--snapshot", FIXTURE)
    try:
        response = httpx.post(f"{base}/graphql", json={"query": "{ workloads { totalCount nodes { name gpu { "
                                                                "requestedBySpec } } } }"}, timeout=10)
        assert response.json()["data"]["workloads"] == {"totalCount": 1, "nodes": [
            {"name": "train", "gpu": {"requestedBySpec": 12}}]}
    finally:
        _stop(proc)


def test_serve_refuses_kubernetes_auth_without_a_cluster(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--auth", "kubernetes", "--snapshot", FIXTURE]) == 2
    assert "needs a cluster" in capsys.readouterr().err


def test_sigterm_answers_a_held_wait_with_503_and_completes_a_subscription_stream(tmp_path: Path) -> None:
    # before: uvicorn's 5 s grace ran out on them, the wait answered 500 with a traceback in the log;
    # the WebSocket got no complete (closed 1012 while the subscription was still running: a fresh-user trial)
    import threading

    proc, base = _serve(tmp_path, "--max-waits-per-client", "1")
    phase = f"{base}/api/v1/namespaces/ml-training/workloads/jobset.x-k8s.io/JobSet/llm-pretrain/phase"
    answers: dict[str, object] = {}
    streaming = threading.Event()

    def wait() -> None:  # the static sample never fails: held until the stop
        deadline = time.monotonic() + 15
        while True:  # a probe below may hold the client's one wait for its 1 ms: then ask again (for 15 s)
            response = httpx.get(f"{phase}?wait=Failed&timeout=60s", timeout=30)
            if response.status_code != 429 or time.monotonic() > deadline:
                break
            time.sleep(0.05)  # a pause between asks, not a wait for an event
        answers["wait"] = (response.status_code, response.headers.get("retry-after"), response.json()["error"])

    def stream() -> None:
        query = {"query": "subscription { workloadPhaseChanged { phase } }"}
        with httpx.stream("POST", f"{base}/graphql", json=query, headers={"Accept": "text/event-stream"},
                          timeout=30) as response:
            streaming.set()  # accepted: subscribed, or it subscribes to the ended feed and ends at once
            answers["stream"] = [line for line in response.iter_lines() if line.startswith("event:")]

    def socket() -> None:  # graphql-transport-ws on the same path
        from websockets.sync.client import connect

        with connect(base.replace("http://", "ws://") + "/graphql", subprotocols=["graphql-transport-ws"]) as ws:
            ws.send(json.dumps({"type": "connection_init"}))
            got = [json.loads(ws.recv(timeout=10))["type"]]
            ws.send(json.dumps({"id": "1", "type": "subscribe",
                                "payload": {"query": "subscription { workloadPhaseChanged { phase } }"}}))
            socketed.set()
            try:
                while True:
                    got.append(json.loads(ws.recv(timeout=30))["type"])
            except Exception as exc:  # noqa: BLE001  # the close ends the loop
                got.append(type(exc).__name__)
            answers["socket"] = (got, ws.close_code)

    socketed = threading.Event()
    threads = [threading.Thread(target=wait), threading.Thread(target=stream), threading.Thread(target=socket)]
    # the log read as it comes: a full stderr pipe would block the server's event loop on its next log line
    # (a probe loop of a few seconds logs enough to fill one: the server stopped answering, found in CI)
    logged: list[str] = []
    drain = threading.Thread(target=lambda: logged.extend(proc.stderr or ()))
    drain.start()
    try:
        for thread in threads:
            thread.start()
        held, deadline = False, time.monotonic() + 15
        while not held and time.monotonic() < deadline:  # a second wait of this client is refused once one is held
            held = httpx.get(f"{phase}?wait=Failed&timeout=1ms", timeout=5).status_code == 429
        assert held and streaming.wait(15) and socketed.wait(15)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=5)
        for thread in [*threads, drain]:
            thread.join(30)
    err = "".join(logged)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert answers["wait"] == (503, "5", "stopping")
    assert answers["stream"] == ["event: complete"]  # the stream ends as a finished subscription, no error event
    assert answers["socket"] == (["connection_ack", "complete", "ConnectionClosedError"], 1012)  # complete, then 1012 (restart)
    assert "Traceback" not in err and "CancelledError" not in err
