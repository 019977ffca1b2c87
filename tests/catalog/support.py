"""Shared helpers of the catalog tests: paths, fixture loading, resolution and a compact summary.

Fixture layout: ``tests/fixtures/objects/<definition slug>/<state>.yaml``, multi-document; the
first document is the workload (root) object, the others are the objects its operator
created (child objects with controller ownerReferences, then pods).

The shared folder (operator CRDs, upstream reference data) sits next to the repository:
``<repo>/../shared``, or ``$WMAP_SHARED_DIR``. Tests that need it skip when it is absent.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from workload_map.definitions.catalog import Catalog, load_catalog
from workload_map.definitions.model import Definition
from workload_map.definitions.registry import DefinitionRegistry
from workload_map.gvk import GVK
from workload_map.resolution import WorkloadView, resolve
from workload_map.resolution.nesting import nested_definitions

REPO = Path(__file__).resolve().parents[2]
CATALOG_DIR = REPO / "catalog"
FIXTURES = REPO / "tests" / "fixtures" / "objects"
SAMPLE_DIR = REPO / "server" / "workload_map" / "sample"

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def shared_dir() -> Path | None:
    """The shared folder (``$WMAP_SHARED_DIR`` or ``<repo>/../shared``), or None when absent."""
    path = Path(os.environ.get("WMAP_SHARED_DIR") or REPO.parent / "shared")
    return path if path.is_dir() else None


@lru_cache(maxsize=1)
def catalog() -> Catalog:
    """The built-in catalog, loaded once."""
    return load_catalog(CATALOG_DIR)


def definition(slug: str) -> Definition:
    """The catalog definition named ``slug``."""
    return catalog().find(slug).definition


def fixture_states(slug: str) -> list[str]:
    """State names (file stems) of the fixtures of ``slug``, sorted."""
    return sorted(p.stem for p in (FIXTURES / slug).glob("*.yaml"))


@lru_cache(maxsize=None)
def _documents(path: str) -> tuple[dict[str, Any], ...]:
    return tuple(d for d in yaml.load_all(Path(path).read_text(encoding="utf-8"), Loader=_Loader) if d)


def load(slug: str, state: str) -> list[dict[str, Any]]:
    """The objects of one fixture file, in file order (the root first)."""
    return list(_documents(str(FIXTURES / slug / f"{state}.yaml")))


def is_pod(obj: dict[str, Any]) -> bool:
    return obj.get("apiVersion") == "v1" and obj.get("kind") == "Pod"


def resolve_objects(defn: Definition, docs: list[dict[str, Any]]) -> WorkloadView:
    """Resolve the first object of ``docs`` whose GVK is the definition's.

    Every other object is passed as a possible owner-chain member (``objects``, pods included:
    a LeaderWorkerSet leader pod owns its group's worker StatefulSet) and every pod as a
    candidate pod; nested children are resolved through their catalog definitions (as
    ``WorkloadService.inputs`` does).
    """
    root = next(d for d in docs if GVK.of(d) == defn.gvk)
    others = [d for d in docs if d is not root]
    nested = nested_definitions(defn, others, catalog_definition)
    return resolve(defn, root, objects=others, pods=[d for d in others if is_pod(d)], nested=nested)


def catalog_definition(obj: dict[str, Any]) -> Definition | None:
    """The catalog definition for ``obj``'s GVK (same group/kind as a fallback), as the server picks it."""
    entry = DefinitionRegistry(catalog()).lookup(GVK.of(obj))
    return entry.definition if entry is not None else None


def resolve_fixture(slug: str, state: str) -> WorkloadView:
    """Resolve fixture ``<slug>/<state>.yaml`` with the catalog definition ``slug``."""
    return resolve_objects(definition(slug), load(slug, state))


@dataclass(frozen=True)
class RoleFigures:
    """Desired / current / ready pods of one role."""

    desired: int
    current: int
    ready: int


def summary(view: WorkloadView) -> dict[str, Any]:
    """The figures the table-driven tests assert, in plain Python values."""
    gpu = view.to_dict()["gpu"]
    return {
        "phase": view.phase.value,
        "phases": [p.value for p in view.phases],
        "roles": {r.name: RoleFigures(r.replicas.desired, r.replicas.current, r.replicas.ready) for r in view.roles()},
        "instances": {c.name: [i.id for i in c.instances] for c in view.all_components() if c.has_pod_definition},
        "pods": (view.replicas.desired, view.replicas.current, view.replicas.ready),
        "gpu": (gpu["requestedBySpec"], gpu["requestedByPods"], gpu["allocated"]),
        "unattributed": sorted(p.name for p in view.unattributed),
        "errors": [e.message for e in view.errors] + [e.message for c in view.all_components() for e in c.errors],
    }


@dataclass(frozen=True)
class Case:
    """The expected view of one fixture state, worked out by hand from the operator's rules.

    Attributes:
        state: fixture file stem.
        phase: headline phase; ``phases``: every matched phase (Entries order).
        roles: role name -> (desired, current, ready) pods.
        instances: pod-bearing component -> instance ids.
        pods: workload totals (desired, current, ready).
        gpu: (requestedBySpec, requestedByPods, allocated) whole GPUs.
        unattributed: names of workload pods no component claims.
        warnings: the view's expected messages (a Degraded workload's evidence), in order.
    """

    state: str
    phase: str
    phases: tuple[str, ...]
    roles: dict[str, tuple[int, int, int]]
    instances: dict[str, list[str]]
    pods: tuple[int, int, int]
    gpu: tuple[int, int, int]
    unattributed: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


def assert_case(slug: str, case: Case) -> WorkloadView:
    """Resolve ``<slug>/<case.state>`` and compare every figure with ``case``."""
    view = resolve_fixture(slug, case.state)
    got = summary(view)
    assert got["errors"] == list(case.warnings), got["errors"]
    assert got["phase"] == case.phase
    assert got["phases"] == list(case.phases)
    assert {k: (v.desired, v.current, v.ready) for k, v in got["roles"].items()} == case.roles
    assert list(got["roles"]) == list(case.roles), "role order"
    assert got["instances"] == case.instances
    assert got["pods"] == case.pods
    assert got["gpu"] == case.gpu
    assert got["unattributed"] == sorted(case.unattributed)
    return view
