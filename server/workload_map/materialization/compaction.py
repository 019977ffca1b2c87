"""Compact a workload view as it arrives from a resolver worker.

A view comes back from the resolver pool unpickled: every string, ``Decimal``, dict and
list in it is a fresh object, and every view carries its own copy of the GPU policy.
Across thousands of views most of them repeat (namespaces, node names, phases, the
requests map of every pod of a replica set, empty error lists, ``Decimal("1")``).
``compact_view`` walks a freshly unpickled view once, before anything else can see it, and
replaces:

- strings of at most ``INTERN_MAX`` characters by their interned copy (``sys.intern``), so
  a pod's name and uid are the very strings the object cache holds;
- dicts by :class:`~workload_map.resolution.frozen.FrozenDict`, lists by
  :class:`~workload_map.resolution.frozen.FrozenList` and sets by ``frozenset``: read-only
  containers whose mutators raise, so sharing them is safe;
- every read-only value (``Decimal``, ``frozenset``, tuple, frozen container, frozen
  record (``msgspec.Struct``) such as the ``GpuPolicy`` or ``Replicas``, and the ``VALUE_RECORDS`` such as
  ``GpuFigures``) by one shared instance per distinct value, kept in the cache's bounded,
  generational table (``SharedValues``). "Distinct" is exact: ``Decimal("1")`` and ``Decimal("1.0")`` are
  equal but print differently, so they stay apart. One exception: a frozen record is
  shared by its own equality (its fields compared with ``==``, not walked), which is exact
  for the frozen classes a view holds: ``Replicas`` counts are plain ints
  (``resolution.extract`` converts counts with ``int`` and refuses a bool; the others are
  sums and lengths), ``GpuPolicy`` holds sets and tuples of names; a
  frozen class holding a number that may be a bool, a float or a ``Decimal`` would need
  its fields keyed instead. A container is shared only when
  everything in it is a shareable value (a list of pods is frozen but not shared; nor is a
  list of conditions whose message, longer than ``INTERN_MAX``, names its workload: such
  values seldom repeat and would only fill the table).

The walk is one pass (``_Walk``): each value comes back with a key part naming it
exactly, and a container's table key is the tuple of its items' parts, a shared child
named by its identity, so finding a container in the table hashes a flat tuple and never
compares sub-trees (276 against 494 us per view with the value-by-value comparison it
replaced, over 3,000 generated workloads, the same objects shared).

A compacted view is ``==`` to what it was and renders the same JSON (the tests under
tests/service check every catalog fixture). Measured with ``python -m benchmarks.memory``
(README, "Memory and scale").
"""

from __future__ import annotations

import enum
import sys
from decimal import Decimal
from typing import Any

from workload_map.kube.compact import INTERN_MAX, SharedValues
from workload_map.resolution.frozen import EMPTY_MAP, FrozenDict, FrozenList
from workload_map.resolution.view import GpuFigures

VALUE_RECORDS: frozenset[type] = frozenset({GpuFigures})
"""Mutable records shared like frozen ones once compacted: nothing assigns their fields
after resolution (their only mutators change their containers, which are read-only by then:
``GpuFigures.merge`` runs while resolving, in the worker)."""

TABLE_CAPACITY = 4_096
"""Entries per generation of the table of shared read-only values (the cache's bounded
generational table, ``workload_map.kube.compact.SharedValues``: at most 8,192 entries, about
1 MB; values that repeat come back within a few views)."""

_TABLE = SharedValues(TABLE_CAPACITY)
_NO = object()
"""Key part of a value that cannot be shared (see :class:`_Walk`)."""

_PLAIN, _FROZEN, _RECORD, _OTHER = range(4)
_KINDS: dict[type, int] = {}
"""Class -> how it is compacted: a record walked in place, a frozen record shared
whole, a :data:`VALUE_RECORDS` class walked then shared, or anything else kept as it is."""


def _kind(cls: type) -> int:
    kind = _KINDS.get(cls)
    if kind is None:
        config = getattr(cls, "__struct_config__", None)
        if config is None:
            kind = _OTHER
        elif config.frozen:
            kind = _FROZEN
        else:
            kind = _RECORD if cls in VALUE_RECORDS else _PLAIN
        _KINDS[cls] = kind
    return kind


class _Walk:
    """One compaction: every value comes back as ``(compact copy, key part)``.

    The key part names a shareable value exactly, so that the table key of a container is
    the tuple of its items' parts (hash-consing, as ``workload_map.kube.compact``): a short
    string is itself, ``None`` is ``None``, a bool, int, float (by its printed form),
    ``Decimal`` (by its printed form: ``1`` and ``1.0`` stay apart) or enum member is
    ``(class, value)``, and a shared container or frozen record is the ``id`` of its one
    shared instance (a bare ``int``, never confused with a number, which is always
    tagged; stable while the table holds the container naming it). A container's key
    starts with a tag of its class (``{`` FrozenDict, ``[`` FrozenList, ``(`` tuple,
    ``s`` frozenset), so values of different types never share, and no comparison walks a
    sub-tree. ``_NO`` marks a value that cannot be shared (a long string, a list of pods),
    and a container holding one is not shared either.

    ``memo`` maps an original's id to its result (shared subtrees, cycles); ``lists`` maps
    the item ids of a list that cannot be shared between views (pods) to its one read-only
    copy within this view (a component with one instance lists the same pods as that
    instance).
    """

    __slots__ = ("lists", "memo")

    def __init__(self) -> None:
        self.memo: dict[int, tuple[Any, Any]] = {}
        self.lists: dict[tuple[int, ...], Any] = {}

    def value(self, value: Any) -> tuple[Any, Any]:
        cls = value.__class__
        if cls is str:
            if len(value) <= INTERN_MAX:
                value = sys.intern(value)
                return value, value
            return value, _NO
        if value is None:
            return None, None
        if cls is int or cls is bool:
            return value, (cls, value)
        if cls is Decimal:
            key = (Decimal, str(value))
            return _TABLE.share(key, value), key
        if cls is float:
            return value, (float, str(value))
        found = self.memo.get(id(value))
        if found is not None:
            return found
        out = self.container(value, cls)
        self.memo[id(value)] = out
        return out

    def container(self, value: Any, cls: type) -> tuple[Any, Any]:
        if cls is dict or cls is FrozenDict:
            return self.mapping(value)
        if cls is list or cls is FrozenList or cls is tuple:
            items: list[Any] = []
            key: list[Any] | None = ["(" if cls is tuple else "["]
            for item in value:
                item, part = self.value(item)
                items.append(item)
                if key is not None:
                    if part is _NO:
                        key = None
                    else:
                        key.append(part)
            out = tuple(items) if cls is tuple else FrozenList(items)
            if key is not None:
                return _share(tuple(key), out)
            if cls is tuple:
                return out, _NO
            return self.lists.setdefault(tuple(map(id, items)), out), _NO  # items live: ids stay valid
        if cls is set or cls is frozenset:
            members = frozenset(self.value(v)[0] for v in value)
            if all(v.__class__ is str for v in members):
                return _share(("s", members), members)
            return members, _NO
        kind = _kind(cls)
        if kind == _OTHER:
            if isinstance(value, enum.Enum):
                return value, (cls, value)
            return value, _NO
        if kind == _FROZEN:
            try:
                out = _TABLE.share((cls, value), value)
            except TypeError:  # an unhashable field: keep it apart
                return value, _NO
            return out, id(out)
        return self.record(value, cls, kind)

    def mapping(self, value: dict[Any, Any]) -> tuple[Any, Any]:
        if not value:
            return EMPTY_MAP, id(EMPTY_MAP)  # the empty map every view's defaults already use
        items: list[tuple[Any, Any]] = []
        key: list[Any] | None = ["{"]
        intern = sys.intern
        for name, item in value.items():
            if name.__class__ is str and len(name) <= INTERN_MAX:  # the common cases inline (``value`` gives the same)
                name = name_part = intern(name)
            else:
                name, name_part = self.value(name)
            if item.__class__ is str and len(item) <= INTERN_MAX:
                item = part = intern(item)
            else:
                item, part = self.value(item)
            items.append((name, item))
            if key is not None:
                if name_part is _NO or part is _NO:
                    key = None
                else:
                    key.append(name_part)
                    key.append(part)
        out = FrozenDict(items)
        if key is None:
            return out, _NO
        return _share(tuple(key), out)

    def record(self, value: Any, cls: type, kind: int) -> tuple[Any, Any]:
        self.memo[id(value)] = (value, _NO)  # cycles end here
        names: tuple[str, ...] = cls.__struct_fields__  # type: ignore[attr-defined]
        parts: list[Any] | None = [cls] if kind == _RECORD else None
        for name in names:
            item = getattr(value, name)
            if item.__class__ is str and len(item) <= INTERN_MAX:
                item = part = sys.intern(item)
            else:
                item, part = self.value(item)
            setattr(value, name, item)
            if parts is not None:
                if part is _NO:
                    parts = None
                else:
                    parts.append(part)
        if parts is None:
            return value, _NO
        return _share(tuple(parts), value)


def _share(key: tuple[Any, ...], value: Any) -> tuple[Any, Any]:
    """``(the one shared instance of key, its part)``."""
    out = _TABLE.share(key, value)
    return out, id(out)


def compact_view(view: Any) -> Any:
    """Compact ``view`` in place (see module docstring) and return it.

    Args:
        view: a freshly unpickled ``WorkloadView`` (or any tree of records) that no
            other code holds yet.

    Returns:
        ``view`` itself (a record is compacted in place; a bare container comes back as
        its read-only copy), equal to what it was (``==`` of every field), its containers
        now read-only (a later change raises ``TypeError``).
    """
    return _Walk().value(view)[0]
