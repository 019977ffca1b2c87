"""Compact copies of cached objects: interned strings and shared sub-trees (hash-consing).

A decoded list page gives every string its own ``str`` object (``json.loads`` shares only
the keys of one call) and every map and list its own container. In a cache of many
similar objects most of them repeat: namespaces, label maps, node names, the
ownerReferences of the pods of one ReplicaSet, the containers of one pod template, pod
conditions, resource requests. ``compact`` rebuilds a trimmed object bottom-up so that:

- every key and every string value of at most ``INTERN_MAX`` characters is one shared
  object (``sys.intern``: interned strings are freed with their last reference);
- a map or a list of at most ``SHARE_MAX_ITEMS`` items whose items are all scalars
  (string, number, bool, null) or shared containers themselves is one shared container
  for every object holding an equal one (``SharedValues``). Equality is by type as well as
  value (``1``, ``1.0`` and ``true`` never share), and a shared child is named in its
  parent's key by identity, so a comparison never walks a sub-tree. Maps carrying
  ``resourceVersion`` (object metadata: one per object version by definition) are never
  shared, so they do not crowd the table.

The table is bounded and generational: a ``young`` and an ``old`` generation of at most
``capacity`` entries each; a hit in ``old`` is promoted, and when ``young`` is full it
becomes ``old`` (the previous old one is dropped). Entries met again stay; a dropped entry
only stops sharing for containers met afterwards (the objects holding it keep it).

Sharing is safe because cached objects are never mutated (``workload_map.kube.store``: an
update replaces the object; writers deep-copy first; resolution builds new dicts, never
writes into the ones it reads). A pickled sub-tree (the resolver pool) keeps the sharing
within one message and is equal to the unshared one.
"""

from __future__ import annotations

import sys
from typing import Any

INTERN_MAX = 64
"""Longest string interned (uids are 36 characters; long annotation values stay apart)."""

SHARE_MAX_ITEMS = 16
"""Most items of a map or list that is shared."""

SHARED_CAPACITY = 32_768
"""Entries per generation of the table of shared containers (``SharedValues``)."""

UNIQUE_KEYS = frozenset({"resourceVersion"})
"""A map carrying one of these keys is never shared (it is one object's own)."""

_NO = object()
"""Key part of a value that cannot be shared (a map or list kept per object)."""

_TRUE, _FALSE = (bool, True), (bool, False)


class SharedValues:
    """One canonical container per distinct shareable map or list (see module docstring).

    Args:
        capacity: entries per generation (at most ``2 * capacity`` remembered).
    """

    def __init__(self, capacity: int = SHARED_CAPACITY) -> None:
        self.capacity = capacity
        self._young: dict[tuple[Any, ...], Any] = {}
        self._old: dict[tuple[Any, ...], Any] = {}
        self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._young) + len(self._old)

    def share(self, key: tuple[Any, ...], value: Any) -> Any:
        """The canonical container of ``key`` (``value`` itself the first time it is met).

        ``key`` must name ``value``'s content exactly (here: a type tag, then each item's
        key part, see ``_node``; the view compaction keys read-only values its own way).
        """
        found = self._young.get(key)
        if found is not None:
            self.hits += 1
            return found
        found = self._old.pop(key, None)
        if found is not None:
            self.hits += 1
            value = found
        else:
            self.misses += 1
        if len(self._young) >= self.capacity:
            self._old, self._young = self._young, {}
        self._young[key] = value
        return value


SHARED = SharedValues()
"""The process-wide table (one cache per process shares most; tests make their own)."""


def compact(value: Any, shared: SharedValues | None = None) -> Any:
    """A compact copy of a JSON-shaped ``value`` (dicts, lists, scalars; see module docstring).

    Args:
        value: decoded JSON; other types are returned as they are (and stop the sharing of
            the containers holding them).
        shared: the table of shared containers (default ``SHARED``).

    Returns:
        An equal value built from fresh dicts and lists, or from shared ones.
    """
    return _node(value, SHARED if shared is None else shared)[0]


def compact_map(value: dict[str, Any], shared: SharedValues | None = None) -> dict[str, Any]:
    """``compact`` of one dict (its keys interned; shared when it qualifies)."""
    return _map(value, SHARED if shared is None else shared)[0]


def _node(value: Any, table: SharedValues) -> tuple[Any, Any]:
    """``(compact copy, key part)``; the key part is ``_NO`` when the copy is not shareable.

    Key parts: a string is itself, ``None`` is ``None``, a bool, int or float is
    ``(type, value)``, a shared container is its ``id`` (a bare ``int``: never confused with
    a number, which is always tagged). The id is stable while the key exists: the table
    holds the parent, which holds the child.
    """
    cls = value.__class__
    if cls is str:
        if len(value) <= INTERN_MAX:
            value = sys.intern(value)
        return value, value
    if cls is dict:
        return _map(value, table)
    if cls is list:
        return _list(value, table)
    if value is None:
        return None, None
    if cls is bool:
        return value, _TRUE if value else _FALSE
    if cls is int or cls is float:
        return value, (cls, value)
    return value, _NO


def _map(value: dict[str, Any], table: SharedValues) -> tuple[dict[str, Any], Any]:
    intern = sys.intern
    out: dict[str, Any] = {}
    key: list[Any] | None = ["{"] if len(value) <= SHARE_MAX_ITEMS and UNIQUE_KEYS.isdisjoint(value) else None
    for name, item in value.items():
        if name.__class__ is str:
            name = intern(name)
        cls = item.__class__
        if cls is str:  # the common case inline (``_node`` gives the same)
            if len(item) <= INTERN_MAX:
                item = intern(item)
            part = item
        elif cls is dict:
            item, part = _map(item, table)
        elif cls is list:
            item, part = _list(item, table)
        else:
            item, part = _node(item, table)
        out[name] = item
        if key is not None:
            if part is _NO:
                key = None
            else:
                key.append(name)
                key.append(part)
    if key is None:
        return out, _NO
    canonical = table.share(tuple(key), out)
    return canonical, id(canonical)


def _list(value: list[Any], table: SharedValues) -> tuple[list[Any], Any]:
    out: list[Any] = []
    key: list[Any] | None = ["["] if len(value) <= SHARE_MAX_ITEMS else None
    for item in value:
        cls = item.__class__
        if cls is str:
            if len(item) <= INTERN_MAX:
                item = sys.intern(item)
            part = item
        elif cls is dict:
            item, part = _map(item, table)
        else:
            item, part = _node(item, table)
        out.append(item)
        if key is not None:
            if part is _NO:
                key = None
            else:
                key.append(part)
    if key is None:
        return out, _NO
    canonical = table.share(tuple(key), out)
    return canonical, id(canonical)
