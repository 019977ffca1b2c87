"""build-helm.sh and helm.py agree, and the script is safe to run anywhere."""

from __future__ import annotations

import re
import subprocess

from .helm import BUILD_SCRIPT, HELM_VERSION


def test_pinned_version_matches_the_python_side() -> None:
    m = re.search(r"^HELM_VERSION=(\S+)$", BUILD_SCRIPT.read_text(), re.M)
    assert m and m.group(1) == HELM_VERSION


def test_script_is_valid_bash_and_locks() -> None:
    text = BUILD_SCRIPT.read_text()
    assert subprocess.run(["bash", "-n", str(BUILD_SCRIPT)], capture_output=True).returncode == 0
    assert "set -euo pipefail" in text and "flock" in text
    assert "workload-map-server/helm-$HELM_VERSION" in text
    assert "go install" in text and "GOBIN=" in text
