"""The read side stays importable without the Kubernetes client (offline CLI, resolution)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path


def test_reader_and_snapshot_do_not_import_the_kubernetes_client() -> None:
    code = (
        "import sys\n"
        "import workload_map.kube.reader, workload_map.kube.snapshot, workload_map.kube.store, workload_map.kube.graph\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('kubernetes_asyncio', 'aiohttp'))\n"
        "assert not bad, bad\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_only_server_kube_imports_kubernetes_asyncio() -> None:
    statement = re.compile(r"^\s*(import|from)\s+kubernetes_asyncio\b", re.MULTILINE)
    root = Path(__file__).resolve().parents[2]
    package = root / "server" / "workload_map"
    offenders = [str(p.relative_to(root)) for p in package.rglob("*.py")
                 if statement.search(p.read_text(encoding="utf-8")) and p.relative_to(package).parts[0] != "kube"]
    assert offenders == []
