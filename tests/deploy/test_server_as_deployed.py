"""The server process as the chart runs it, under the chart's RBAC, against the test API server.

The rendered Deployment's environment (``WMAP_*``) and arguments are used as they are, except
what only makes sense in a pod: the listen address is 127.0.0.1 on a free port (the image's
0.0.0.0 is for the container only), the state directory is a temporary one, and the
credentials are a kubeconfig holding a TokenRequest token of the chart's ServiceAccount (what
the pod gets in-cluster). The server must become ready with every informer synced, none
``forbidden``.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from .clusterkit import RBAC_KINDS, Resources, as_user, request_token, service_account_user, wait_rbac
from .helm import one
from .kinds import watched_gvks

pytestmark = pytest.mark.cluster

REPO_ROOT = Path(__file__).resolve().parents[2]
READY_TIMEOUT_S = 90.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_command(deployment: dict[str, Any], port: int, kubeconfig: Path) -> list[str]:
    """The image's entrypoint (``wmap serve --host 0.0.0.0``) plus the chart's args, for a test."""
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    args = list(container.get("args") or [])
    if "--port" in args:
        args[args.index("--port") + 1] = str(port)
    return [sys.executable, "-m", "workload_map", "serve", "--host", "127.0.0.1", *args, "--kubeconfig", str(kubeconfig)]


def server_env(deployment: dict[str, Any], port: int, state_dir: Path) -> dict[str, str]:
    """The chart's plain ``env`` entries over a clean environment (no WMAP_*/KUBECONFIG of ours)."""
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("WMAP_") and k != "KUBECONFIG"}
    env.update({e["name"]: e["value"] for e in container["env"] if "value" in e})
    env.update(WMAP_PORT=str(port), WMAP_STATE_DIR=str(state_dir), PYTHONPATH=str(REPO_ROOT))
    env.pop("WMAP_DEFINITIONS_DIR", None)
    return env


@pytest.fixture
def deployed_server(admin: httpx.Client, release: Any, namespace: str, k8s_control_plane: Any,
                    tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes], Path]]:
    """Start the server as the chart's Deployment would; yield (base URL, process, log path)."""
    from tests.cluster.kubeconfig import write_kubeconfig

    rel = release()
    rel.create(*RBAC_KINDS)
    user = service_account_user(rel, namespace)
    wait_rbac(admin, as_user(user), "", "pods")
    token = request_token(admin, namespace, user.rsplit(":", 1)[1])
    kubeconfig = write_kubeconfig(tmp_path / "sa.yaml", k8s_control_plane.server, k8s_control_plane.ca_file,
                                  "wmap-sa", token=token)
    deployment = dict(one(rel.objects, "Deployment"))
    port = free_port()
    log = tmp_path / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(server_command(deployment, port, kubeconfig),
                                env=server_env(deployment, port, tmp_path / "state"), cwd=tmp_path,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield f"http://127.0.0.1:{port}", proc, log
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)


def wait_ready(base: str, proc: subprocess.Popen[bytes], log: Path) -> str:
    """Poll /readyz?verbose until 200 (bounded); return the verbose text."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    text = ""
    with httpx.Client(base_url=base, trust_env=False, timeout=5) as c:
        while time.monotonic() < deadline:
            assert proc.poll() is None, f"server exited with {proc.returncode}:\n{log.read_text()[-4000:]}"
            try:
                r = c.get("/readyz", params={"verbose": "1"})
                text = r.text
                if r.status_code == 200:
                    return text
            except httpx.TransportError:
                pass
            time.sleep(0.3)
    raise AssertionError(f"not ready in {READY_TIMEOUT_S:.0f} s:\n{text}\n--- log ---\n{log.read_text()[-4000:]}")


def test_server_becomes_ready_with_every_informer_synced(deployed_server: tuple[str, Any, Path],
                                                         admin: httpx.Client) -> None:
    base, proc, log = deployed_server
    text = wait_ready(base, proc, log)
    lines = [ln for ln in text.splitlines() if ln.startswith("[")]
    assert all(ln.startswith("[+]") for ln in lines), text
    assert not [ln for ln in lines if " forbidden" in ln], f"informers forbidden under the chart's RBAC:\n{text}"
    informers = [ln for ln in lines if ln.startswith("[+]informer ")]
    served = {g for g in watched_gvks() if Resources(admin).find(g) is not None}
    for group, version, kind in served:
        name = f"informer {group or 'core'}/{version}/{kind} synced"
        assert any(name in ln for ln in informers), f"{name} missing from /readyz?verbose:\n{text}"
    with httpx.Client(base_url=base, trust_env=False, timeout=5) as c:
        assert c.get("/livez").status_code == 200


def test_server_enforces_the_charts_auth_mode(deployed_server: tuple[str, Any, Path],
                                              k8s_control_plane: Any) -> None:
    from workload_map import config

    if "WMAP_AUTH" not in getattr(config, "ENVIRONMENT", {}):
        pytest.skip("this server build does not read WMAP_* settings from the environment yet")
    base, proc, log = deployed_server
    wait_ready(base, proc, log)
    with httpx.Client(base_url=base, trust_env=False, timeout=10) as c:
        r = c.get("/api/v1/workloads")
        assert r.status_code == 401, f"auth.mode=kubernetes (the chart's default) must refuse anonymous: {r.text}"
        r = c.get("/api/v1/workloads", headers={"Authorization": f"Bearer {k8s_control_plane.tokens['admin-token']}"})
        assert r.status_code == 200, f"{r.status_code} {r.text[:500]}\n{log.read_text()[-3000:]}"
