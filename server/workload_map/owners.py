"""Owner references: the one rule for "who controls this object", shared by every layer.

Kubernetes marks the managing owner with ``controller: true`` (API conventions,
"ownerReferences"; controllers and kubectl follow it). Only that reference is followed: an
object merely owned by another (for garbage collection, without ``controller``) is not
part of its workload, as upstream ``kli`` decides. Chains are followed at most
:data:`MAX_OWNER_DEPTH` hops (``kli`` uses 6).

:func:`owner_chain` is the one walk every layer uses (the cache graph, pod attribution, the
top-level check). Its rules:

* **Namespaces** (kubernetes.io "Owners and Dependents"): a namespaced dependent's owner is
  in the same namespace or cluster-scoped; a cluster-scoped dependent's owner is
  cluster-scoped. A reference whose uid resolves to an object elsewhere is not an owner:
  the walk stops there and reports it in ``foreign``, so one team's pods are never billed
  to another team's workload that happens to carry the uid.
* **Cycles** (an ownerReference loop, which the API server does not prevent): detected, and
  the chain is cut at the cycle member with the smallest uid (its *representative*), so
  every member's chain ends there: the representative is the cycle's top, listed once with
  :func:`cycle_message` as its error, and the pods below it are counted once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from msgspec import Struct, field

MAX_OWNER_DEPTH = 6

Lookup = Callable[[str], "Mapping[str, Any] | None"]
"""uid -> object (or None when unknown), e.g. ``Reader.by_uid``."""


def controller_uid(obj: Mapping[str, Any]) -> str | None:
    """UID of the ownerReference with ``controller: true``, else None."""
    meta = obj.get("metadata")
    refs = meta.get("ownerReferences") if type(meta) is dict or isinstance(meta, Mapping) else None
    if not refs or not isinstance(refs, list):
        return None
    for ref in refs:
        if (type(ref) is dict or isinstance(ref, Mapping)) and ref.get("controller") is True and ref.get("uid"):
            return str(ref["uid"])
    return None


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if type(meta) is dict or isinstance(meta, Mapping) else {}


def uid_of(obj: Mapping[str, Any]) -> str:
    """``metadata.uid`` as a string ("" when absent)."""
    return str(_meta(obj).get("uid") or "")


def may_own(owner: Mapping[str, Any], dependent: Mapping[str, Any]) -> bool:
    """The namespace rule: ``owner`` is cluster-scoped, or in ``dependent``'s namespace.

    A cluster-scoped dependent may only have a cluster-scoped owner.
    https://kubernetes.io/docs/concepts/overview/working-with-objects/owners-dependents/
    """
    owner_ns = _meta(owner).get("namespace") or ""
    return not owner_ns or owner_ns == (_meta(dependent).get("namespace") or "")


def describe(obj: Mapping[str, Any]) -> str:
    """``Kind namespace/name`` (``Kind name`` when cluster-scoped) for messages."""
    meta = _meta(obj)
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{obj.get('kind', '?')} {where}{meta.get('name', '?')}"


class OwnerChain(Struct):
    """The controller ancestors of one object, nearest first.

    Attributes:
        ancestors: owners found by the lookup that pass the namespace rule, nearest first,
            at most ``max_depth``; cut at the representative when there is a cycle.
        dangling: uid of the next controller reference that the lookup did not know (the
            owner is not cached, or is gone), else None.
        foreign: the object the next controller reference resolved to when it broke the
            namespace rule, else None.
        cycle: the objects of an ownerReference cycle on the chain, in walk order, else [].
    """

    ancestors: list[Mapping[str, Any]] = field(default_factory=list)
    dangling: str | None = None
    foreign: Mapping[str, Any] | None = None
    cycle: list[Mapping[str, Any]] = field(default_factory=list)

    @property
    def top(self) -> Mapping[str, Any] | None:
        """The farthest ancestor (None when the object has no known owner)."""
        return self.ancestors[-1] if self.ancestors else None

    def uids(self) -> list[str]:
        """UIDs of the ancestors, nearest first."""
        return [uid_of(a) for a in self.ancestors]


def owner_chain(obj: Mapping[str, Any], lookup: Lookup, max_depth: int = MAX_OWNER_DEPTH) -> OwnerChain:
    """Walk ``obj``'s controller references upwards (module docstring for the rules).

    Args:
        obj: any Kubernetes object as a dict.
        lookup: uid -> object or None.
        max_depth: most hops followed.

    Returns:
        The :class:`OwnerChain`. Never raises on malformed objects (they end the walk).
    """
    chain = OwnerChain()
    visited: list[Mapping[str, Any]] = [obj]
    seen = {uid_of(obj): 0} if uid_of(obj) else {}
    current = obj
    for _ in range(max_depth):
        owner_uid = controller_uid(current)
        if owner_uid is None:
            break
        if owner_uid in seen:
            _cut_cycle(chain, visited, seen[owner_uid])
            return chain
        owner = lookup(owner_uid)
        if owner is None:
            chain.dangling = owner_uid
            break
        if not may_own(owner, current):
            chain.foreign = owner
            break
        seen[owner_uid] = len(visited)
        visited.append(owner)
        chain.ancestors.append(owner)
        current = owner
    return chain


def _cut_cycle(chain: OwnerChain, visited: list[Mapping[str, Any]], start: int) -> None:
    """Record the cycle ``visited[start:]`` and end the ancestors at its representative."""
    chain.cycle = visited[start:]
    representative = min(chain.cycle, key=uid_of)
    position = next(i for i, o in enumerate(visited) if o is representative)
    chain.ancestors = visited[1:position + 1]


def cycle_message(cycle: list[Mapping[str, Any]]) -> str:
    """``ownerReference cycle: A -> B -> A`` naming each object by kind, namespace and name."""
    names = [describe(o) for o in cycle]
    return "ownerReference cycle: " + " -> ".join([*names, names[0]]) if names else ""


def is_top_level(obj: Mapping[str, Any], lookup: Lookup, covered: Callable[[Mapping[str, Any]], bool]) -> bool:
    """True when no controller ancestor of ``obj`` is ``covered`` (has a definition).

    The walk is :func:`owner_chain`, so an owner in another namespace does not hide a
    workload, and of an ownerReference cycle exactly one member (the representative) is
    top-level: the cycle is listed once, never vanishing from every list.
    """
    return not any(covered(a) for a in owner_chain(obj, lookup).ancestors)
