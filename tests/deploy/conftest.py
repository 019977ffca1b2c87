"""Fixtures of the deployment tests: the helm binary (built at session start in CI)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from .helm import build_helm, find_helm, require_helm, should_build


def pytest_configure(config: pytest.Config) -> None:
    """In CI (or with WMAP_BUILD_HELM=1) build a missing helm now, before any test's timeout runs."""
    if find_helm() is not None or not should_build():
        return
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    say = reporter.write_line if reporter is not None else print
    say("[helm-bin] helm not found: running tests/deploy/build-helm.sh (cold: a few minutes)")
    t0 = time.monotonic()
    ok = build_helm()
    say(f"[helm-bin] build {'done' if ok else 'FAILED'} in {time.monotonic() - t0:.0f} s")


@pytest.fixture(scope="session")
def helm() -> Path:
    """The helm binary (``$WMAP_HELM`` or the build-helm.sh cache)."""
    return require_helm()
