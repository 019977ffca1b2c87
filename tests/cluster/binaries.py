"""Locate the kube-apiserver and etcd binaries built by ``tests/cluster/build.sh``.

Search order (envtest-style): ``TEST_ASSET_KUBE_APISERVER`` + ``TEST_ASSET_ETCD``, then a
``KUBEBUILDER_ASSETS`` directory, then the per-user cache
``${XDG_CACHE_HOME:-$HOME/.cache}/workload-map-server/kube-test-bin/<kube>-etcd-<etcd>/``
for the pinned pair, the fallback pair, and finally any other cached pair.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

# Keep in sync with build.sh (test_binaries_unit.py checks it).
PINNED = ("v1.37.2", "v3.7.3")
FALLBACK = ("v1.36.3", "v3.6.16")


@dataclass(frozen=True)
class Binaries:
    """Paths of a runnable kube-apiserver and etcd, plus where they were found (``source``)."""

    kube_apiserver: Path
    etcd: Path
    source: str


def cache_root() -> Path:
    """The per-user binary cache root (not created here)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "workload-map-server" / "kube-test-bin"


def _runs(path: Path) -> bool:
    if not (path.is_file() and os.access(path, os.X_OK)):
        return False
    try:
        res = subprocess.run([str(path), "--version"], capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return res.returncode == 0


def _pair(kube: Path, etcd: Path, source: str) -> Binaries | None:
    if _runs(kube) and _runs(etcd):
        return Binaries(kube, etcd, source)
    return None


def find_binaries() -> Binaries | None:
    """Return the first runnable kube-apiserver + etcd pair in search order, or ``None``.

    Each candidate is checked by running ``--version`` (exit status 0). Never raises for
    missing or broken files.
    """
    kube_env = os.environ.get("TEST_ASSET_KUBE_APISERVER")
    etcd_env = os.environ.get("TEST_ASSET_ETCD")
    if kube_env and etcd_env:
        found = _pair(Path(kube_env), Path(etcd_env), "TEST_ASSET_* env")
        if found:
            return found
    assets = os.environ.get("KUBEBUILDER_ASSETS")
    if assets:
        found = _pair(Path(assets) / "kube-apiserver", Path(assets) / "etcd", "KUBEBUILDER_ASSETS")
        if found:
            return found
    root = cache_root()
    dirs = [root / f"{k}-etcd-{e}" for k, e in (PINNED, FALLBACK)]
    if root.is_dir():
        dirs += sorted((d for d in root.glob("v*-etcd-v*") if d not in dirs), reverse=True)
    for d in dirs:
        found = _pair(d / "kube-apiserver", d / "etcd", f"cache {d.name}")
        if found:
            return found
    return None


def missing_message() -> str:
    """Human-readable hint on how to provide the binaries."""
    return (
        "kube-apiserver/etcd not found (TEST_ASSET_KUBE_APISERVER + TEST_ASSET_ETCD, "
        f"KUBEBUILDER_ASSETS, or the cache {cache_root()}): run `make cluster-bin` "
        "(or `bash tests/cluster/build.sh`) to build them"
    )
