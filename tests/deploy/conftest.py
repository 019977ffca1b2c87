"""Fixtures of the deployment tests: the helm binary (built at session start in CI)."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from .clusterkit import Release
from .helm import build_helm, find_helm, require_helm, should_build, template


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


@pytest.fixture(scope="module")
def admin(k8s_control_plane: Any) -> Iterator[httpx.Client]:
    """An admin client of the session control plane."""
    with k8s_control_plane.client() as c:
        yield c


@pytest.fixture
def release(admin: httpx.Client, helm: Path, namespace: str) -> Iterator[Callable[..., Release]]:
    """``release(sets=()) -> Release``: the chart rendered into the test namespace under a unique
    release name; whatever the test creates from it is deleted afterwards."""
    made: list[Release] = []

    def make(sets: tuple[str, ...] = ()) -> Release:
        name = f"r{secrets.token_hex(3)}"
        rel = Release(admin, template(helm, release=name, namespace=namespace, sets=sets), name)
        made.append(rel)
        return rel

    yield make
    for rel in made:
        rel.delete()
