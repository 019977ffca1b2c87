"""pytest plugin: a real etcd + kube-apiserver for tests marked ``cluster``.

Fixtures:

* ``k8s_control_plane`` (session): a started ``ControlPlane`` with the CRDs installed (the
  operators' CRDs from the shared folder when present, the project's minimal CRDs for the rest).
  Missing binaries -> skip (run ``make cluster-bin``), or fail when ``CI=true``.
* ``namespace`` (function): name of a fresh namespace ``t-<random>``; deleted without waiting.
* ``second_control_plane`` (module): another etcd + kube-apiserver on other free ports with
  the project's minimal CRDs outside the protected ``*.k8s.io`` groups, for multi-cluster tests; stopped after the module (each
  kube-apiserver holds several hundred MiB, so it lives only as long as its tests).

Environment: ``WMAP_TEST_SHARED_CRDS=0`` installs only the minimal CRDs (faster);
``WMAP_KEEP_CLUSTER_DIR=1`` keeps the temporary directory (logs, PKI, kubeconfigs).
Tests using ``k8s_control_plane`` get the ``cluster`` marker automatically; mark them anyway.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Iterator

import pytest

from .binaries import find_binaries, missing_message
from .controlplane import ControlPlane
from .crds import own_crds

_STATS: dict[str, object] = {}


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


@pytest.hookimpl(tryfirst=True)  # before `-m` deselection runs
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Add the ``cluster`` marker to every test that uses ``k8s_control_plane``."""
    for item in items:
        if "k8s_control_plane" in getattr(item, "fixturenames", ()) and not item.get_closest_marker("cluster"):
            item.add_marker(pytest.mark.cluster)


@pytest.fixture(scope="session")
def k8s_control_plane(request: pytest.FixtureRequest) -> Iterator[ControlPlane]:
    """Session-wide ``ControlPlane`` (started, CRDs installed); stopped after the run."""
    bins = find_binaries()
    if bins is None:
        if _in_ci():
            pytest.fail(f"CI=true and {missing_message()}", pytrace=False)
        pytest.skip(missing_message())
    worker = getattr(request.config, "workerinput", {}).get("workerid", "main")  # pytest-xdist
    cp = ControlPlane(bins.kube_apiserver, bins.etcd, prefix=f"wmap-cp-{worker}-")
    try:
        cp.start()
        t0 = time.monotonic()
        if os.environ.get("WMAP_TEST_SHARED_CRDS", "1") != "0":
            cp.install_shared_crds()
        cp.install_own_crds()
        cp.timings["crds_total"] = time.monotonic() - t0
        _STATS.update(source=bins.source, timings=dict(cp.timings), crds=len(cp.installed_crds),
                      shared=sum(1 for v in cp.installed_crds.values() if v == "shared"),
                      rss=cp.rss())
    except BaseException:
        print(cp.log_tails())
        cp.stop(keep_dir=True)
        raise
    yield cp
    _STATS["rss_end"] = cp.rss()
    cp.stop(keep_dir=os.environ.get("WMAP_KEEP_CLUSTER_DIR") == "1")


@pytest.fixture(scope="module")
def second_control_plane(k8s_control_plane: ControlPlane) -> Iterator[ControlPlane]:
    """A second ``ControlPlane`` (own etcd, own ports, minimal CRDs); stopped after the module."""
    bins = find_binaries()
    assert bins is not None  # k8s_control_plane skipped or failed otherwise
    cp = ControlPlane(bins.kube_apiserver, bins.etcd, prefix="wmap-cp2-")
    try:
        cp.start()
        # the minimal CRDs outside the protected *.k8s.io groups (those need the shared CRDs'
        # approval annotation): JobSet, Kubeflow, Ray, ... are enough for these tests
        cp.create_crds([m for m in own_crds() if not m["spec"]["group"].endswith((".k8s.io", ".kubernetes.io"))],
                       source="own")
    except BaseException:
        print(cp.log_tails())
        cp.stop(keep_dir=True)
        raise
    yield cp
    cp.stop(keep_dir=os.environ.get("WMAP_KEEP_CLUSTER_DIR") == "1")


@pytest.fixture
def namespace(k8s_control_plane: ControlPlane) -> Iterator[str]:
    """Create a fresh namespace ``t-<8 hex>`` as admin; yield its name; delete, never wait."""
    k8s_control_plane.start_apiserver()  # no-op when running; recovers after a test stopped it
    name = f"t-{secrets.token_hex(4)}"
    with k8s_control_plane.client() as c:
        r = c.post("/api/v1/namespaces", json={
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": {"wmap.test/namespace": "true"}}})
        assert r.status_code == 201, f"create namespace {name}: {r.status_code} {r.text}"
    yield name
    try:
        with k8s_control_plane.client() as c:
            c.delete(f"/api/v1/namespaces/{name}", timeout=10)
    except Exception:  # the control plane may be down (a test stopped it); nothing to clean
        pass


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ANN001
    """Print control-plane timings and RSS when one was started in this run."""
    if not _STATS:
        return
    mib = lambda v: "n/a" if v is None else f"{v / 2**20:.0f} MiB"  # noqa: E731
    t = _STATS["timings"]
    rss, end = _STATS["rss"], _STATS.get("rss_end") or {}
    terminalreporter.write_sep("-", "test control plane")
    terminalreporter.write_line(
        f"binaries: {_STATS['source']}; start {t.get('start', 0):.1f} s; "
        f"CRDs {_STATS['crds']} ({_STATS['shared']} shared) in {t.get('crds_total', 0):.1f} s; "
        f"RSS after CRDs: kube-apiserver {mib(rss['kube-apiserver'])}, etcd {mib(rss['etcd'])}; "
        f"at end: kube-apiserver {mib(end.get('kube-apiserver'))}")
