"""Which pods name a shared ResourceClaim, so a claim's change re-resolves their workloads.

A ResourceClaim that pods name in ``spec.resourceClaims[].resourceClaimName`` is created on its
own (no ownerReference), so the owner graph links it to no workload; the materializer asks
this index instead (``workload_map.materialization.materializer``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class ClaimDependents:
    """(namespace, ResourceClaim name) -> uids of the pods whose ``spec.resourceClaims`` name it.

    Pod specs name a shared claim by ``resourceClaimName``
    (https://kubernetes.io/docs/concepts/scheduling-eviction/dynamic-resource-allocation/);
    only pods that name one are kept.
    """

    def __init__(self) -> None:
        self._names: dict[str, tuple[str, frozenset[str]]] = {}  # pod uid -> (namespace, claim names)
        self._pods: dict[tuple[str, str], set[str]] = {}

    def update(self, pod: Mapping[str, Any], deleted: bool = False) -> None:
        """Record (or, when ``deleted``, forget) the claims ``pod`` names."""
        meta = pod.get("metadata") or {}
        uid = str(meta.get("uid") or "")
        if not uid:
            return
        namespace, old = self._names.pop(uid, ("", frozenset()))
        for name in old:
            pods = self._pods.get((namespace, name))
            if pods is not None:
                pods.discard(uid)
                if not pods:
                    del self._pods[(namespace, name)]
        refs = (pod.get("spec") or {}).get("resourceClaims")  # the store checked spec is an object
        refs = refs if isinstance(refs, list) else ()
        names = frozenset(str(r["resourceClaimName"]) for r in refs if isinstance(r, Mapping) and r.get("resourceClaimName"))
        if deleted or not names:
            return
        namespace = str(meta.get("namespace") or "")
        self._names[uid] = (namespace, names)
        for name in names:
            self._pods.setdefault((namespace, name), set()).add(uid)

    def pods_of(self, namespace: str, name: str) -> list[str]:
        """UIDs of the pods naming claim ``namespace/name`` (sorted)."""
        return sorted(self._pods.get((namespace, name), ()))

    def __len__(self) -> int:
        return len(self._names)
