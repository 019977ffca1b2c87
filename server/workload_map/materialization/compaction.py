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
  dataclass such as the ``GpuPolicy`` or ``Replicas``, and the ``VALUE_RECORDS`` such as
  ``GpuFigures``) by one shared instance per distinct value, kept in the cache's bounded,
  generational table (``SharedValues``). "Distinct" is exact: ``Decimal("1")`` and ``Decimal("1.0")`` are
  equal but print differently, so they stay apart. A container is shared only when
  everything in it is a shareable value (a list of pods is frozen but not shared; nor is a
  list of conditions whose message, longer than ``INTERN_MAX``, names its workload: such
  values seldom repeat and would only fill the table).

A compacted view is ``==`` to what it was and renders the same JSON (the tests under
tests/service check every catalog fixture). Measured with ``python -m benchmarks.memory``
(README, "Memory and scale").
"""

from __future__ import annotations

import dataclasses
import enum
import sys
from decimal import Decimal
from typing import Any

from workload_map.kube.compact import INTERN_MAX, SharedValues
from workload_map.resolution.frozen import EMPTY_MAP, FrozenDict, FrozenList
from workload_map.resolution.view import GpuFigures

VALUE_RECORDS: frozenset[type] = frozenset({GpuFigures})
"""Mutable dataclasses shared like frozen ones once compacted: nothing assigns their fields
after resolution (their only mutators change their containers, which are read-only by then:
``GpuFigures.merge`` runs while resolving, in the worker)."""

TABLE_CAPACITY = 4_096
"""Entries per generation of the table of shared read-only values (the cache's bounded
generational table, ``workload_map.kube.compact.SharedValues``: at most 8,192 entries, about
1 MB; values that repeat come back within a few views)."""

_SCALARS = (str, int, bool, float, type(None))
_TABLE = SharedValues(TABLE_CAPACITY)
_FIELDS: dict[type, tuple[str, ...]] = {}


class _Exact:
    """Table key of a read-only container: equal only when equal value by value and type."""

    __slots__ = ("value", "hash")

    def __init__(self, value: Any) -> None:
        self.value = value
        self.hash = hash(value)

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Exact) and _same(self.value, other.value)


def _same(a: Any, b: Any) -> bool:
    """Exact equality: same type at every level, ``Decimal`` by its printed form."""
    if a is b:
        return True
    cls = a.__class__
    if cls is not b.__class__:
        return False
    if cls is Decimal or cls is float:
        return str(a) == str(b)
    if cls is FrozenDict:
        return len(a) == len(b) and all(_same(ka, kb) and _same(va, vb)
                                        for (ka, va), (kb, vb) in zip(a.items(), b.items()))
    if cls is FrozenList or cls is tuple:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return bool(a == b)  # str, int, frozenset of strings, frozen dataclasses


def _shared(key: Any, value: Any) -> Any:
    if value.__class__ is FrozenDict and not value:
        return EMPTY_MAP  # the empty map every view's defaults already use
    return _TABLE.share(key, value)


class _Walk:
    """One compaction.

    ``memo`` maps an original's id to its result (shared subtrees, cycles); ``shareable``
    holds the ids of results that may be shared; ``lists`` maps the item ids of a list that
    cannot be shared between views (pods) to its one read-only copy within this view (a
    component with one instance lists the same pods as that instance).
    """

    __slots__ = ("lists", "memo", "shareable")

    def __init__(self) -> None:
        self.memo: dict[int, Any] = {}
        self.shareable: set[int] = set()
        self.lists: dict[tuple[int, ...], Any] = {}

    def can_share(self, value: Any) -> bool:
        cls = value.__class__
        if cls is str:  # a long string (a condition's message naming its workload) seldom repeats
            return len(value) <= INTERN_MAX
        return cls in _SCALARS or cls is Decimal or isinstance(value, enum.Enum) or id(value) in self.shareable

    def value(self, value: Any) -> Any:
        cls = value.__class__
        if cls is str:
            return sys.intern(value) if len(value) <= INTERN_MAX else value
        if cls in _SCALARS:
            return value
        if cls is Decimal:
            return _shared((Decimal, str(value)), value)
        found = self.memo.get(id(value))
        if found is not None:
            return found
        out = self.container(value)
        self.memo[id(value)] = out
        return out

    def container(self, value: Any) -> Any:
        cls = value.__class__
        if cls is dict or cls is FrozenDict:
            items = [(self.value(k), self.value(v)) for k, v in value.items()]
            return self.share(FrozenDict(items), all(self.can_share(k) and self.can_share(v) for k, v in items))
        if cls is list or cls is FrozenList or cls is tuple:
            items = [self.value(v) for v in value]
            out = tuple(items) if cls is tuple else FrozenList(items)
            if all(self.can_share(v) for v in items):
                return self.share(out, True)
            if cls is tuple:
                return out
            return self.lists.setdefault(tuple(map(id, items)), out)  # items live: ids stay valid
        if cls is set or cls is frozenset:
            members = [self.value(v) for v in value]
            return self.share(frozenset(members), all(v.__class__ is str for v in members))
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return self.dataclass(value)
        return value

    def share(self, value: Any, shareable: bool) -> Any:
        if not shareable:
            return value
        try:
            out = _shared(_Exact(value), value)
        except TypeError:  # unhashable after all: keep it apart
            return value
        self.shareable.add(id(out))
        return out

    def dataclass(self, value: Any) -> Any:
        cls = value.__class__
        params = getattr(cls, "__dataclass_params__", None)
        if params is not None and params.frozen:
            try:
                out = _shared((cls, value), value)
            except TypeError:  # an unhashable field: keep it apart
                return value
            self.shareable.add(id(out))
            return out
        self.memo[id(value)] = value  # cycles end here
        names = _FIELDS.get(cls)
        if names is None:
            names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(value))
        for name in names:
            setattr(value, name, self.value(getattr(value, name)))
        if cls in VALUE_RECORDS:
            fields = tuple(getattr(value, name) for name in names)
            if all(self.can_share(v) for v in fields):
                out = _shared((cls, _Exact(fields)), value)
                self.shareable.add(id(out))
                return out
        return value


def compact_view(view: Any) -> Any:
    """Compact ``view`` in place (see module docstring) and return it.

    Args:
        view: a freshly unpickled ``WorkloadView`` (or any slotted dataclass tree) that no
            other code holds yet.

    Returns:
        ``view`` itself (a dataclass is compacted in place; a bare container comes back as
        its read-only copy), equal to what it was (``==`` of every field), its containers
        now read-only (a later change raises ``TypeError``).
    """
    return _Walk().value(view)
