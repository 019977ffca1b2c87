"""Shell completion answers from the real control plane: namespaces and workload names."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.cluster


def complete(line: str, kubeconfig: Path, answers: Path) -> list[str]:
    env = {**os.environ, "_ARGCOMPLETE": "1", "_ARGCOMPLETE_IFS": "\n", "COMP_LINE": line,
           "COMP_POINT": str(len(line)), "_ARGCOMPLETE_STDOUT_FILENAME": str(answers), "KUBECONFIG": str(kubeconfig)}
    subprocess.run([sys.executable, "-m", "workload_map"], env=env, capture_output=True, timeout=60)
    return [a.strip() for a in answers.read_text().split("\n") if a.strip()]


def test_namespaces_and_names_come_from_the_cluster(k8s_control_plane: Any, namespace: str, tmp_path: Path) -> None:
    cp = k8s_control_plane
    with cp.client() as c:
        for name in ("alpha", "beta"):
            r = c.post(f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{namespace}/jobsets", json={
                "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": name},
                "spec": {"replicatedJobs": []}})
            assert r.status_code == 201, r.text
    answers = tmp_path / "answers"
    assert complete(f"wmap get jobset -n {namespace[:5]}", cp.admin_kubeconfig, answers).count(namespace) == 1
    got = complete(f"wmap describe -n {namespace} jobset/", cp.admin_kubeconfig, answers)
    assert got == ["jobset/alpha", "jobset/beta"]  # the TYPE/NAME form: names of that type in the namespace
    assert complete(f"wmap describe -n {namespace} jobset/a", cp.admin_kubeconfig, answers) == ["jobset/alpha"]
