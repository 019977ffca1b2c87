"""Compact copies of cached objects: interned strings and shared sub-trees (hash-consing).

A decoded list page gives every string its own ``str`` object (``json.loads`` shares only
the keys of one call) and every map and list its own container. In a cache of many
similar objects most of them repeat: namespaces, label maps, node names, the
ownerReferences of the pods of one ReplicaSet, the containers of one pod template, pod
conditions, resource requests. ``compact`` rebuilds a trimmed object so that:

- every key and every string value of at most ``INTERN_MAX`` characters is one shared
  object (``sys.intern``: interned strings are freed with their last reference);
- a map or a list of at most ``SHARE_MAX_ITEMS`` items whose items are all scalars
  (string, number, bool, null) or shareable containers themselves is one shared container
  for every object holding an equal one (``SharedValues``). Maps carrying
  ``resourceVersion`` (object metadata: one per object version by definition) are never
  shared, so they do not crowd the table.

How a shared container is found (top down): the table key of a small container is its
MessagePack encoding (msgspec's encoder, C), at most ``KEY_MAX_BYTES`` long. It is looked
up before the container is walked, so a container met before (a pod template's
containers, a label map) comes back whole without visiting its items; only a container
not found is rebuilt item by item (its children looked up the same way) and then kept.
The encoding is exact for JSON's types: ``1``, ``1.0`` and ``true`` differ, as do a list
and a map of the same items, ``-0.0`` and ``0.0``. A container holding anything else (a
value of another type, a non-string key, a huge int) is copied and never kept; note that
msgspec encodes some other types like JSON ones (a tuple or set like a list, a date like
its ISO text), so such a container can come back as the JSON value it encodes to. The
cache holds JSON types only: the API server's JSON, and YAML read into JSON's types
(``workload_map.kube.yamljson``). Figures (about 40 % less CPU than the tuple-keyed
bottom-up walk it replaced, the same sharing, 8 MB more of keys at full tables):
docs/engine-speed.md, "The load".

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
from collections.abc import Hashable
from typing import Any

import msgspec

INTERN_MAX = 64
"""Longest string interned (uids are 36 characters; long annotation values stay apart)."""

SHARE_MAX_ITEMS = 16
"""Most items of a map or list that is shared."""

KEY_MAX_BYTES = 1024
"""Longest table key (encoded container) kept: longer containers are copied, not shared.
On the benchmark dump this leaves 0.1 % more distinct containers than no bound, with 60 %
of the key bytes (13.4 against 21.4 MB at full tables)."""

SHARED_CAPACITY = 32_768
"""Entries per generation of the table of shared containers (``SharedValues``)."""

UNIQUE_KEYS = frozenset({"resourceVersion"})
"""A map carrying one of these keys is never shared (it is one object's own)."""

_encode = msgspec.msgpack.Encoder().encode


class SharedValues:
    """One canonical container per distinct shareable value (see module docstring).

    Keys are any hashable value naming a container's content exactly: the cache's
    encoded containers (:meth:`find` / :meth:`keep`), the view compaction's tuples
    (:meth:`share`).

    Args:
        capacity: entries per generation (at most ``2 * capacity`` remembered).
    """

    def __init__(self, capacity: int = SHARED_CAPACITY) -> None:
        self.capacity = capacity
        self._young: dict[Hashable, Any] = {}
        self._old: dict[Hashable, Any] = {}
        self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._young) + len(self._old)

    def find(self, key: Hashable) -> Any:
        """The canonical value of ``key``, or None (a hit in the old generation is promoted)."""
        found = self._young.get(key)
        if found is not None:
            self.hits += 1
            return found
        found = self._old.pop(key, None)
        if found is not None:
            self.hits += 1
            self._put(key, found)
        return found

    def keep(self, key: Hashable, value: Any) -> None:
        """Make ``value`` the canonical value of ``key`` (not found by :meth:`find` just before)."""
        self.misses += 1
        self._put(key, value)

    def share(self, key: Hashable, value: Any) -> Any:
        """The canonical value of ``key`` (``value`` itself the first time it is met).

        ``key`` must name ``value``'s content exactly (the view compaction keys read-only
        values by tuples of their items' key parts).
        """
        found = self.find(key)
        if found is not None:
            return found
        self.keep(key, value)
        return value

    def _put(self, key: Hashable, value: Any) -> None:
        if len(self._young) >= self.capacity:
            self._old, self._young = self._young, {}
        self._young[key] = value


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
    return _container(value, SHARED if shared is None else shared)[0]  # type: ignore[return-value]  # dict in, dict out


def _node(value: Any, table: SharedValues) -> tuple[Any, bool]:
    """``(compact copy, shareable)``: a scalar of a JSON type, or a container now shared."""
    cls = value.__class__
    if cls is str:
        return (sys.intern(value) if len(value) <= INTERN_MAX else value), True
    if cls is dict or cls is list:
        return _container(value, table)
    return value, value is None or cls is bool or cls is int or cls is float


def _key(value: dict[str, Any] | list[Any]) -> bytes | None:
    """The table key of a container small enough to share, or None (see the module docstring)."""
    try:
        key = _encode(value)
    except (TypeError, ValueError, OverflowError, RecursionError):  # a type msgpack has no form for, a huge
        return None  # int, nesting deeper than msgspec encodes (then copied as before, up to Python's limit)
    return key if len(key) <= KEY_MAX_BYTES else None


def _container(value: dict[str, Any] | list[Any], table: SharedValues) -> tuple[dict[str, Any] | list[Any], bool]:
    """``(compact copy, shareable)`` of a dict or list: found by its key, else rebuilt and kept.

    One function for both, recursing into itself: one Python frame per level of nesting, so
    the depth it takes is the interpreter's recursion limit, as before the keys were encoded.
    """
    is_map = value.__class__ is dict
    small = len(value) <= SHARE_MAX_ITEMS and (not is_map or UNIQUE_KEYS.isdisjoint(value))
    key = _key(value) if small else None
    if key is not None:
        found = table.find(key)
        if found is not None:
            return found, True
    intern = sys.intern
    items: list[Any] = []
    shareable = key is not None
    item: Any
    for item in value.values() if is_map else value:  # type: ignore[union-attr]
        cls = item.__class__
        if cls is str:  # the common case inline (``_node`` gives the same)
            if len(item) <= INTERN_MAX:
                item = intern(item)
        elif cls is dict or cls is list:
            item, shared = _container(item, table)
            shareable = shareable and shared
        elif not (item is None or cls is bool or cls is int or cls is float):
            shareable = False
        items.append(item)
    out: dict[str, Any] | list[Any] = items
    if is_map:
        try:
            out = dict(zip(map(intern, value), items))
        except TypeError:  # a key that is not a str (sys.intern takes no other type, no subclass)
            out = dict(zip((intern(n) if n.__class__ is str else n for n in value), items))
            shareable = False
    if shareable:
        table.keep(key, out)  # key is the encoding of value
    return out, shareable
