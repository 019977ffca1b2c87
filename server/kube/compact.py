"""Compact copies of cached objects: interned strings and shared string-valued maps.

A decoded list page gives every string its own ``str`` object (``json.loads`` shares only
the keys of one call) and every map its own ``dict``. In a cache of many similar objects
most of them repeat: namespaces, label keys and values, node names, GVKs, owner uids,
condition types, quantities. ``compact`` rebuilds a trimmed object so that:

- every key and every string value of at most ``INTERN_MAX`` characters is one shared
  object (``sys.intern``: interned strings are freed with their last reference);
- a map whose values are all strings (labels, annotations, resource requests and limits)
  with at most ``SHARE_MAX_ITEMS`` items is shared between objects holding the same items
  in the same order, through a bounded table (``SharedMaps``; emptied when full, which only
  stops sharing for maps met afterwards).

Sharing is safe because cached objects are never mutated (``workload_map.kube.store``: an update
replaces the object; writers deep-copy first). A pickled subtree (the resolver pool) keeps
the sharing within one message and is equal to the unshared one.
"""

from __future__ import annotations

import sys
from typing import Any

INTERN_MAX = 64
"""Longest string interned (uids are 36 characters; long annotation values stay apart)."""

SHARE_MAX_ITEMS = 16
"""Largest string-valued map shared."""

SHARED_CAPACITY = 65_536
"""Distinct shared maps remembered before the table is emptied."""


class SharedMaps:
    """One canonical ``dict`` per distinct small string-valued map (see module docstring).

    Args:
        capacity: entries kept before the table is emptied.
    """

    def __init__(self, capacity: int = SHARED_CAPACITY) -> None:
        self.capacity = capacity
        self._table: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}
        self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._table)

    def share(self, value: dict[str, str]) -> dict[str, str]:
        """The canonical map equal to ``value`` (``value`` itself the first time)."""
        key = tuple(value.items())
        found = self._table.get(key)
        if found is not None:
            self.hits += 1
            return found
        self.misses += 1
        if len(self._table) >= self.capacity:
            self._table.clear()
        self._table[key] = value
        return value


SHARED = SharedMaps()
"""The process-wide table (one cache per process shares most; tests make their own)."""


def compact(value: Any, shared: SharedMaps | None = None) -> Any:
    """A compact copy of a JSON-shaped ``value`` (dicts, lists, scalars; see module docstring).

    Args:
        value: decoded JSON; other types are returned as they are.
        shared: the table of shared maps (default ``SHARED``).

    Returns:
        An equal value built from fresh dicts and lists (shared small maps excepted).
    """
    return _compact(value, SHARED if shared is None else shared)


def _compact(value: Any, shared: SharedMaps) -> Any:
    cls = value.__class__
    if cls is str:
        return sys.intern(value) if len(value) <= INTERN_MAX else value
    if cls is dict:
        return compact_map(value, shared)
    if cls is list:
        return [_compact(item, shared) for item in value]
    return value


def compact_map(value: dict[str, Any], shared: SharedMaps | None = None) -> dict[str, Any]:
    """``compact`` of one dict (its keys interned; shared when small and string-valued)."""
    table = SHARED if shared is None else shared
    intern = sys.intern
    only_strings = True
    out: dict[str, Any] = {}
    for key, item in value.items():
        cls = item.__class__
        if cls is str:
            item = intern(item) if len(item) <= INTERN_MAX else item
        elif cls is dict or cls is list:
            only_strings = False
            item = _compact(item, table)
        else:
            only_strings = False
        out[intern(key) if key.__class__ is str else key] = item
    if only_strings and 0 < len(out) <= SHARE_MAX_ITEMS:
        return table.share(out)
    return out
