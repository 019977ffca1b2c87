"""Visibility rules: which workloads, and which pod details, a caller may see.

The rules (issue 6; the kube-rbac-proxy model, ecosystem.md 5.5):

* A workload is visible when the caller may ``list`` its root resource (group + plural) in
  its namespace (at cluster scope for cluster-scoped kinds). Lists are *filtered*, never
  refused: for each kind the cluster-wide permission is asked first, and only when it is
  denied is each namespace holding objects of that kind asked (concurrently; the policy
  bounds reviews in flight).
* One workload the caller may not list is reported exactly like a missing one (404 / null).
* Pod details (pod rows, pod names, node names) are shown only where the caller may ``get``
  pods in the namespace; counts and GPU totals of a visible workload stay.

The plural of a kind comes from the informer (``Reader.state(gvk).resource``); a kind the
informer has not resolved has no cached objects, so nothing of it can be shown.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from workload_map.auth.access import Guard
from workload_map.definitions.registry import Entry
from workload_map.gvk import GVK
from workload_map.kube.reader import Reader
from workload_map.resolution import WorkloadView
from workload_map.service.reads import WorkloadReads

Allow = Callable[[GVK, "str | None"], bool]
"""A visibility predicate over (root GVK, namespace); ``None`` namespace = cluster-scoped."""


def plural_of(reader: Reader, gvk: GVK) -> str:
    """The resource plural the informer resolved for ``gvk`` ("" when unknown)."""
    try:
        return reader.state(gvk).resource
    except Exception:  # a reader without informer states (snapshot): no plural known
        return ""


def _entries(service: WorkloadReads, *, kind: str | None, group: str | None,
             definition: str | None) -> list[Entry]:
    return [e for e in service.registry.entries()
            if (not kind or e.gvk.kind.lower() == kind.lower()) and (group is None or e.gvk.group == group)
            and (not definition or e.definition.name == definition)]


def _namespaces(reader: Reader, gvk: GVK, namespace: str | None) -> set[str | None]:
    return {(o.get("metadata") or {}).get("namespace") or None for o in reader.list(gvk, namespace)}


async def list_scope(guard: Guard, service: WorkloadReads, *, namespace: str | None = None,
                     kind: str | None = None, group: str | None = None,
                     definition: str | None = None) -> Allow | None:
    """The predicate of what ``guard``'s caller may list among the matching kinds.

    Returns:
        None when nothing is filtered (auth off, or every kind allowed cluster-wide), else a
        predicate for ``WorkloadReads.workloads(allow=...)``.

    Raises:
        ReviewUnavailable: a review could not be made.
    """
    if guard.is_open:
        return None
    resources = {e.gvk: plural_of(service.reader, e.gvk)
                 for e in _entries(service, kind=kind, group=group, definition=definition)}
    known = {gvk: plural for gvk, plural in resources.items() if plural}
    first = await guard.allows_each(("list", g.group, p, namespace) for g, p in known.items())
    everywhere = {gvk for gvk, ok in zip(known, first) if ok}
    pairs = [(gvk, ns) for gvk in known if gvk not in everywhere and namespace is None
             for ns in sorted(_namespaces(service.reader, gvk, None), key=lambda n: n or "") if ns]
    second = await guard.allows_each(("list", g.group, known[g], ns) for g, ns in pairs)
    allowed = {pair for pair, ok in zip(pairs, second) if ok}
    if len(everywhere) == len(resources):
        return None
    return lambda gvk, ns: gvk in everywhere or (gvk, ns) in allowed


async def workload_scope(guard: Guard, service: WorkloadReads, namespace: str | None, group: str,
                         kind: str) -> Allow | None:
    """The predicate for one workload lookup (``WorkloadReads.workload(allow=...)``).

    The caller must be allowed to list the kind in ``namespace``.

    Raises:
        ReviewUnavailable: a review could not be made.
    """
    if guard.is_open:
        return None
    gvks = [e.gvk for e in _entries(service, kind=kind, group=group, definition=None)]
    plurals = [plural_of(service.reader, gvk) for gvk in gvks]
    decisions = await guard.allows_each(("list", g.group, p, namespace or "") for g, p in zip(gvks, plurals) if p)
    granted = iter(decisions)
    allowed = {gvk for gvk, p in zip(gvks, plurals) if p and next(granted)}
    return lambda gvk, ns: gvk in allowed


async def may_see(guard: Guard, reader: Reader, view: WorkloadView) -> bool:
    """True when the caller may list ``view``'s kind in its namespace.

    Raises:
        ReviewUnavailable: a review could not be made.
    """
    if guard.is_open:
        return True
    gvk = GVK.from_api_version(view.api_version, view.kind)
    plural = plural_of(reader, gvk)
    return bool(plural) and await guard.allows("list", gvk.group, plural, view.namespace or "")


async def pod_namespaces(guard: Guard, namespaces: Iterable[str | None]) -> set[str] | None:
    """The namespaces (of ``namespaces``) where the caller may get pods; None = all (auth off).

    Raises:
        ReviewUnavailable: a review could not be made.
    """
    if guard.is_open:
        return None
    wanted = sorted({ns for ns in namespaces if ns})
    decisions = await guard.allows_each(("get", "", "pods", ns) for ns in wanted)
    return {ns for ns, ok in zip(wanted, decisions) if ok}


_POD_LISTS = ("pods", "nodes")


def hide_pod_details(doc: Any) -> Any:
    """A copy of a JSON view (``WorkloadView.to_dict()``) without pod rows, pod and node names.

    ``pods``, ``nodes``, ``unattributedPods`` and gang ``pods`` become empty lists. Counts,
    phases and GPU totals are kept.
    """
    if isinstance(doc, list):
        return [hide_pod_details(item) for item in doc]
    if not isinstance(doc, dict):
        return doc
    out: dict[str, Any] = {}
    for key, value in doc.items():
        if key in _POD_LISTS or key == "unattributedPods":
            out[key] = []
        else:
            out[key] = hide_pod_details(value)
    return out
