"""The import-linter contracts in pyproject.toml hold, and they do catch a violation.

The second test copies the package (server/workload_map) with pyproject.toml into a temporary directory,
adds imports the layers forbid, and runs ``lint-imports`` there: each broken contract
must be reported by name.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter is not installed (test extras)")


def lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(cwd / "server")}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def test_the_tree_keeps_every_contract() -> None:
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_forbidden_imports_are_reported(tmp_path: Path) -> None:
    package = tmp_path / "server" / "workload_map"
    shutil.copytree(ROOT / "server" / "workload_map", package, ignore=shutil.ignore_patterns("__pycache__", "sample"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    with open(package / "service" / "rows.py", "a", encoding="utf-8") as handle:
        handle.write("\nimport workload_map.graphql.types  # a service reaching up into GraphQL\nimport starlette\n")
    with open(package / "cli" / "inputs.py", "a", encoding="utf-8") as handle:
        handle.write("\nimport workload_map.cli.main  # a cycle inside workload_map.cli\nimport workload_map.api.rest\n")
    with open(package / "graphql" / "cluster.py", "a", encoding="utf-8") as handle:
        handle.write("\nimport workload_map.kube.freshness  # GraphQL reaching into the cache\n")
    (package / "stray.py").write_text('"""A module in no layer."""\n')
    result = lint_imports(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    out = " ".join(result.stdout.split())
    for contract in ("Layers: front doors", "Every server subpackage and module is placed in a layer",
                     "GraphQL types only through the GraphQL endpoint", "the CLI reaches the API only",
                     "No import cycles between sibling modules", "starlette only in workload_map.app and workload_map.api",
                     "GraphQL code never imports the cache"):
        assert out.count(contract) >= 2, contract  # listed as BROKEN, then explained
    assert "workload_map.stray" in out
    assert "Contracts: 3 kept, 7 broken." in out
