"""Read-only containers a stored view shares with other views.

A stored view is read-only by rule; once compacted (``workload_map.materialization.compaction``)
its dicts and lists are :class:`FrozenDict` and :class:`FrozenList`, and equal ones (the
requests map of every pod asking for ``{"nvidia.com/gpu": 1, "cpu": 4}``, every empty
list of errors) are one object shared by every view. Sharing is safe because the
containers refuse every change: a mutator raises ``TypeError`` instead of changing
another workload's view as well.

Both are plain ``dict`` / ``list`` subclasses, so every reader (``json``, ``==`` against an
uncompacted view, ``sorted``, iteration, ``dict(x)``) works unchanged; copies
(``dict(x)``, ``list(x)``, ``x | y``, ``x + y``) are ordinary mutable containers. Pickling and
``copy`` rebuild them through the constructor.

"""

from __future__ import annotations

from typing import Any, NoReturn, TypeVar

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")


class FrozenDict(dict[K, V]):
    """A ``dict`` whose mutators raise ``TypeError`` (hashable when its values are)."""

    __slots__ = ()

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.__class__, (dict(self),))

    def __copy__(self) -> FrozenDict[K, V]:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenDict[K, V]:
        return self


class FrozenList(list[T]):
    """A ``list`` whose mutators raise ``TypeError`` (hashable when its items are)."""

    __slots__ = ()

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.__class__, (list(self),))

    def __copy__(self) -> FrozenList[T]:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenList[T]:
        return self


def _read_only(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise TypeError(f"a {type(self).__name__} of a stored view is read-only (it may be shared by other "
                    "views): copy it first")


_MUTATORS = {
    FrozenDict: ("__setitem__", "__delitem__", "__ior__", "clear", "pop", "popitem", "setdefault", "update"),
    FrozenList: ("__setitem__", "__delitem__", "__iadd__", "__imul__", "append", "clear", "extend", "insert",
                 "pop", "remove", "reverse", "sort"),
}
for _cls, _names in _MUTATORS.items():
    for _name in _names:
        setattr(_cls, _name, _read_only)

EMPTY_MAP: FrozenDict[Any, Any] = FrozenDict()
"""The one shared empty mapping (default of rarely set view fields)."""
