"""GVK -> resource plural and scope, from API discovery and the CRDs being watched.

Two sources, in this order:

1. **CRDs** (``apiextensions.k8s.io/v1`` ``customresourcedefinitions``), kept current by a
   reflector (``CrdWatcher``). A CRD for the GVK's group and kind decides alone: the GVK
   is served when the CRD is ``Established`` and the version is ``served``
   (https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/).
   Every CRD change invalidates the discovery caches of its group and calls ``on_change``
   so the informer cache can start or drop reflectors.
2. **Discovery** documents ``/api/v1`` and ``/apis/GROUP/VERSION`` (``APIResourceList``),
   cached per group-version for ``ttl`` (6 h, like kubectl's discovery cache); a GVK found
   missing is remembered for ``negative_ttl`` (1 min, like KAI) so missing CRDs cause no
   discovery storm (tomplus/kubernetes_asyncio ``dynamic/discovery.py`` rediscovers
   everything on a miss; we do not). Model: kr8s-org/kr8s ``kr8s/_api.py``.

Errors: ``resolve`` raises ``KubeApiError`` when discovery itself fails (network, 5xx,
403); "not served" is a ``None`` result, not an error.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from cachetools import TTLCache
from msgspec import Struct

from workload_map.gvk import GVK
from workload_map.kube.api import gv_path
from workload_map.kube.errors import KubeApiError
from workload_map.kube.reader import KubeObject
from workload_map.kube.store import Changes, Store
from workload_map.logs import logger

log = logger(__name__)

CRD_GVK = GVK("apiextensions.k8s.io", "v1", "CustomResourceDefinition")
CRD_PLURAL = "customresourcedefinitions"
DISCOVERY_TTL = 6 * 3600.0
NEGATIVE_TTL = 60.0


class ResourceInfo(Struct, frozen=True):
    """How to address a GVK: ``plural`` resource name and whether it is namespaced."""

    gvk: GVK
    plural: str
    namespaced: bool


class JsonGetter(Protocol):
    """``workload_map.kube.api.KubeApi`` as far as discovery needs it."""

    async def get_json(self, path: str, query: dict[str, Any] | None = None) -> dict[str, Any]:
        """GET ``path``; raises ``KubeApiError``."""
        ...


def crd_resource(crd: Mapping[str, Any], version: str) -> ResourceInfo | None:
    """The resource a (trimmed) CRD serves at ``version``; ``None`` if not served now."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    conditions = (crd.get("status") or {}).get("conditions") or []
    established = any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)
    served = any(v.get("name") == version and v.get("served") for v in spec.get("versions") or [])
    deleting = bool((crd.get("metadata") or {}).get("deletionTimestamp"))
    if not (established and served and names.get("plural") and names.get("kind")) or deleting:
        return None
    gvk = GVK(str(spec.get("group", "")), version, str(names["kind"]))
    return ResourceInfo(gvk, str(names["plural"]), spec.get("scope") == "Namespaced")


class CrdIndex:
    """The CRDs in the cluster by (group, kind); a reflector sink.

    Args:
        on_change: called with ``(group, kind)`` after a CRD appears, changes or goes.
    """

    def __init__(self, on_change: Callable[[str, str], None] | None = None) -> None:
        self._store = Store(CRD_GVK)
        self._by_group_kind: dict[tuple[str, str], KubeObject] = {}
        self.synced = False
        """True once a full CRD list arrived; until then discovery alone decides."""
        self.seen: set[tuple[str, str]] = set()
        """Every (group, kind) a CRD has defined since start: such kinds never fall back
        to discovery once their CRD is gone (discovery lags behind CRD deletion)."""
        self._listeners: list[Callable[[str, str], None]] = [on_change] if on_change else []

    def add_listener(self, listener: Callable[[str, str], None]) -> None:
        """Also call ``listener(group, kind)`` on changes."""
        self._listeners.append(listener)

    def get(self, group: str, kind: str) -> KubeObject | None:
        """The trimmed CRD defining ``group``/``kind``, if any."""
        return self._by_group_kind.get((group, kind))

    def __len__(self) -> int:
        return len(self._by_group_kind)

    def prepare(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Reflector sink: the trimmed CRD (its schemas dropped as each list page arrives)."""
        return self._store.trim(obj)

    async def replace(self, objects: list[dict[str, Any]], namespace: str | None, *, prepared: bool = False) -> None:
        """Reflector sink: the full CRD list (from then on the index is trusted; tens of objects, one go)."""
        self.synced = True
        self._changed(self._store.replace(objects, trimmed=prepared))

    def apply(self, event_type: str, obj: Mapping[str, Any]) -> None:
        """Reflector sink: one CRD event."""
        if event_type == "DELETED":
            name = (obj.get("metadata") or {}).get("name", "")
            self._changed(self._store.delete(None, str(name)))
        else:
            self._changed(self._store.upsert(obj))

    def _changed(self, changes: Changes) -> None:
        for event_type, crd in changes:
            spec = crd.get("spec") or {}
            key = (str(spec.get("group", "")), str((spec.get("names") or {}).get("kind", "")))
            if event_type == "DELETED":
                if self._by_group_kind.get(key) is crd:
                    del self._by_group_kind[key]
            else:
                self._by_group_kind[key] = crd
                self.seen.add(key)
            for listener in self._listeners:
                listener(*key)


class Discovery:
    """Resolves GVKs to ``ResourceInfo`` with positive and negative TTL caches.

    Args:
        api: GET access to the API server.
        crds: the CRD index, consulted first once it has been listed (``crds.synced``).
        ttl: seconds a group-version's resource list is reused.
        negative_ttl: seconds a missing GVK is reported missing without asking again.
        clock: monotonic clock (tests pass a fake).
    """

    def __init__(
        self, api: JsonGetter, *, crds: CrdIndex | None = None, ttl: float = DISCOVERY_TTL,
        negative_ttl: float = NEGATIVE_TTL, clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._api = api
        self.crds = crds if crds is not None else CrdIndex()
        self._groups: TTLCache[tuple[str, str], dict[str, ResourceInfo]] = TTLCache(512, ttl, timer=clock)
        self._missing: TTLCache[GVK, bool] = TTLCache(4096, negative_ttl, timer=clock)
        self.requests = 0
        self.crds.add_listener(lambda group, kind: self.invalidate(group))

    async def resolve(self, gvk: GVK) -> ResourceInfo | None:
        """The resource serving ``gvk``, or ``None`` when the API server does not serve it.

        Raises:
            KubeApiError: discovery failed (other than 404 for the group-version).
        """
        if gvk == CRD_GVK:
            return ResourceInfo(CRD_GVK, CRD_PLURAL, False)
        if self.crds.synced:
            crd = self.crds.get(gvk.group, gvk.kind)
            if crd is not None:
                return crd_resource(crd, gvk.version)
            if gvk.group_kind in self.crds.seen:
                return None
        if gvk in self._missing:
            return None
        resources = self._groups.get((gvk.group, gvk.version))
        if resources is None or gvk.kind not in resources:
            # A cached list may predate a new CRD: a miss asks again, at most once per
            # negative_ttl per GVK.
            resources = await self._fetch(gvk.group, gvk.version)
        info = resources.get(gvk.kind)
        if info is None:
            self._missing[gvk] = True
        return info

    def invalidate(self, group: str | None = None) -> None:
        """Forget cached answers for ``group`` (every group when ``None``)."""
        if group is None:
            self._groups.clear()
            self._missing.clear()
            return
        for key in [k for k in self._groups if k[0] == group]:
            self._groups.pop(key, None)
        for gvk in [g for g in self._missing if g.group == group]:
            self._missing.pop(gvk, None)

    async def _fetch(self, group: str, version: str) -> dict[str, ResourceInfo]:
        """Read one discovery document; a 404 (group-version not served) is not cached."""
        self.requests += 1
        try:
            document = await self._api.get_json(gv_path(group, version))
        except KubeApiError as exc:
            if not exc.is_not_found:
                raise
            return {}
        resources = _parse_resources(group, version, document)
        self._groups[(group, version)] = resources
        return resources


def _parse_resources(group: str, version: str, document: Mapping[str, Any]) -> dict[str, ResourceInfo]:
    """``kind -> ResourceInfo`` of an ``APIResourceList`` (subresources and unwatchable skipped)."""
    found: dict[str, ResourceInfo] = {}
    for resource in document.get("resources") or []:
        name, kind = resource.get("name", ""), resource.get("kind", "")
        verbs = set(resource.get("verbs") or [])
        if not name or "/" in name or not kind or not {"list", "watch"} <= verbs:
            continue
        found.setdefault(kind, ResourceInfo(GVK(group, version, kind), name, bool(resource.get("namespaced"))))
    return found
