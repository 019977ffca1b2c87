"""Every `wmap` and `curl` command in the README's ```sh blocks runs as written.

A `wmap serve` with no cluster configured (the bundled sample) is started on a free
127.0.0.1 port; the README's 127.0.0.1:8080 is rewritten to that port. `make run` / `make
test` are exercised by this serve and by .ci/run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import httpx
import pytest

REPO = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", text, flags=re.S):
        commands += [line.strip() for line in block.splitlines() if line.strip().startswith(("wmap ", "curl "))]
    return commands


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, dict[str, str]]]:
    home = tmp_path_factory.mktemp("home")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WMAP_", "KUBECONFIG"))}
    env.update(HOME=str(home), WMAP_STATE_DIR=str(home / "state"),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}")
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "workload_map", "serve", "--port", str(port)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        else:
            raise AssertionError("wmap serve did not become ready")
        yield port, env
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def test_readme_has_commands() -> None:
    commands = readme_commands()
    assert sum(c.startswith("curl ") for c in commands) >= 8
    assert sum(c.startswith("wmap ") for c in commands) >= 5


@pytest.mark.parametrize("command", readme_commands())
def test_readme_command(command: str, server: tuple[int, dict[str, str]]) -> None:
    port, env = server
    assert shutil.which("wmap", path=env["PATH"]), "wmap must be installed in the venv"
    line = command.replace("127.0.0.1:8080", f"127.0.0.1:{port}")
    result = subprocess.run(line, shell=True, cwd=REPO, env=env, capture_output=True, text=True, timeout=60,
                            check=False)
    assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}"
    assert result.stdout.strip(), command
    if command.startswith("curl ") and result.stdout.lstrip().startswith("{"):
        body = json.loads(result.stdout)
        assert "error" not in body and "errors" not in body, body
