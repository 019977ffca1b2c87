"""Find, build and run the helm binary for the chart tests.

Search order: ``$WMAP_HELM``, then the per-user cache that ``tests/deploy/build-helm.sh`` fills,
``${XDG_CACHE_HOME:-$HOME/.cache}/workload-map-server/helm-<HELM_VERSION>/helm``. Without helm the
tests skip with a message saying how to get it, or fail when ``CI=true``. With ``CI=true`` (or
``WMAP_BUILD_HELM=1``) a missing helm is first built by ``build-helm.sh`` when the test session
starts (see ``conftest.py``), outside any test's timeout.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

# Keep in sync with build-helm.sh (test_build_helm_script checks it).
HELM_VERSION = "v3.22.0"

REPO_ROOT = Path(__file__).resolve().parents[2]
CHART_DIR = REPO_ROOT / "deploy" / "helm" / "workload-map-server"
BUILD_SCRIPT = Path(__file__).resolve().parent / "build-helm.sh"


def cache_path() -> Path:
    """Where build-helm.sh puts helm (the file may not exist)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "workload-map-server" / f"helm-{HELM_VERSION}" / "helm"


def _runs(path: Path) -> bool:
    if not (path.is_file() and os.access(path, os.X_OK)):
        return False
    try:
        out = subprocess.run([str(path), "version", "--template", "{{.Version}}"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0 and out.stdout.startswith("v3.")


def find_helm() -> Path | None:
    """A runnable helm v3: ``$WMAP_HELM`` first, then the cache; ``None`` when neither runs."""
    env = os.environ.get("WMAP_HELM")
    if env and _runs(Path(env)):
        return Path(env)
    cached = cache_path()
    return cached if _runs(cached) else None


def missing_message() -> str:
    """How to get helm, for skip and failure messages."""
    return (f"helm {HELM_VERSION} not found (looked at $WMAP_HELM and {cache_path()}); "
            f"build it with `bash tests/deploy/build-helm.sh` (needs Go, a few minutes) or set "
            f"WMAP_HELM=/path/to/helm")


BUILD_LOG: list[str] = []
"""Output of build-helm.sh when this session ran it (for failure messages)."""


def should_build() -> bool:
    """Build a missing helm at session start: in CI, or when asked with ``WMAP_BUILD_HELM=1``."""
    return os.environ.get("CI", "").lower() == "true" or os.environ.get("WMAP_BUILD_HELM") == "1"


def build_helm(timeout: float = 1800) -> bool:
    """Run build-helm.sh (idempotent, locked); keep its output in ``BUILD_LOG``; True on success."""
    try:
        out = subprocess.run(["bash", str(BUILD_SCRIPT)], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        BUILD_LOG.append(f"build-helm.sh timed out after {timeout:.0f} s\n{exc.stdout or ''}{exc.stderr or ''}")
        return False
    BUILD_LOG.append(out.stdout + out.stderr)
    return out.returncode == 0


def require_helm() -> Path:
    """The helm binary; skip the test without it, or fail when ``CI=true``."""
    helm = find_helm()
    if helm is None:
        if os.environ.get("CI", "").lower() == "true":
            log = "".join(BUILD_LOG)[-3000:]
            pytest.fail(f"CI=true and {missing_message()}" + (f"\nbuild-helm.sh output:\n{log}" if log else ""),
                        pytrace=False)
        pytest.skip(missing_message())
    return helm


def run_helm(helm: Path, *args: str, timeout: float = 120,
             home: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run helm without the caller's HELM_* and KUBECONFIG settings.

    ``home``: a directory for helm's cache, config and data (commands that talk to a cluster
    write there); without it helm's defaults apply (template and lint write nothing).
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HELM_", "KUBECONFIG"))}
    if home is not None:
        env.update(HELM_CACHE_HOME=str(home / "cache"), HELM_CONFIG_HOME=str(home / "config"),
                   HELM_DATA_HOME=str(home / "data"))
    return subprocess.run([str(helm), *args], capture_output=True, text=True, timeout=timeout, env=env)


def template(helm: Path, *, release: str = "wmap", namespace: str = "workload-map",
             values: Mapping[str, Any] | None = None, sets: Sequence[str] = (),
             tmp_path: Path | None = None) -> list[dict[str, Any]]:
    """``helm template`` the chart; return the rendered objects (empty documents dropped).

    ``values`` is written to a values file (needs ``tmp_path``); ``sets`` are ``--set`` items.
    Raises ``AssertionError`` with helm's stderr when rendering fails.
    """
    args = ["template", release, str(CHART_DIR), "--namespace", namespace]
    if values:
        assert tmp_path is not None, "values need tmp_path"
        path = tmp_path / f"values-{len(list(tmp_path.glob('values-*.yaml')))}.yaml"
        path.write_text(yaml.safe_dump(dict(values)))
        args += ["--values", str(path)]
    for item in sets:
        args += ["--set", item]
    out = run_helm(helm, *args)
    assert out.returncode == 0, f"helm {' '.join(args)} failed:\n{out.stderr}"
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def by_kind(objects: Sequence[Mapping[str, Any]], kind: str) -> list[Mapping[str, Any]]:
    """The objects of one kind, in render order."""
    return [o for o in objects if o.get("kind") == kind]


def one(objects: Sequence[Mapping[str, Any]], kind: str, name: str | None = None) -> Mapping[str, Any]:
    """The single object of ``kind`` (and ``name``); fails the test otherwise."""
    found = [o for o in by_kind(objects, kind) if name is None or o["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind} {name or ''}, got {[o['metadata']['name'] for o in found]}"
    return found[0]
