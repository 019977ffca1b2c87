"""Compact a workload view as it arrives from a resolver worker.

A view comes back from the resolver pool unpickled: every string, ``Decimal`` and
``frozenset`` in it is a fresh object, and every view carries its own copy of the GPU
policy. Across thousands of views most of them repeat (namespaces, node names, phases,
resource names, GPU counts such as ``Decimal("1")``). ``compact_view`` walks a freshly
unpickled view once, before anything else can see it, and replaces:

- strings of at most ``INTERN_MAX`` characters by their interned copy (``sys.intern``);
- ``Decimal`` values, ``frozenset``s and frozen dataclasses (the ``GpuPolicy``) by one
  shared instance per distinct value (a bounded table, emptied when full);
- dict keys by interned strings (dicts, lists and sets themselves stay per view: views are
  read-only by rule, but nothing mutable is shared between two views).

Measured with ``python -m benchmarks.memory`` (README, "Memory and scale").
"""

from __future__ import annotations

import dataclasses
import sys
from decimal import Decimal
from typing import Any

from workload_map.kube.compact import INTERN_MAX

TABLE_CAPACITY = 65_536
"""Distinct shared immutable values remembered before the table is emptied."""

_SHARED: dict[Any, Any] = {}


def _shared(key: Any, value: Any) -> Any:
    found = _SHARED.get(key)
    if found is not None:
        return found
    if len(_SHARED) >= TABLE_CAPACITY:
        _SHARED.clear()
    _SHARED[key] = value
    return value


def compact_view(view: Any) -> Any:
    """Compact ``view`` in place (see module docstring) and return it.

    Args:
        view: a freshly unpickled ``WorkloadView`` (or any slotted dataclass tree) that no
            other code holds yet.

    Returns:
        ``view`` itself; equal to what it was (``==`` of every field).
    """
    memo: dict[int, Any] = {}
    _value(view, memo)
    return view


def _value(value: Any, memo: dict[int, Any]) -> Any:
    cls = value.__class__
    if cls is str:
        return sys.intern(value) if len(value) <= INTERN_MAX else value
    if value is None or cls is bool or cls is int or cls is float:
        return value
    if cls is Decimal:
        return _shared((Decimal, str(value)), value)
    if cls is frozenset:
        return _shared((frozenset, value), value)
    found = memo.get(id(value))
    if found is not None:
        return found
    out = _container(value, memo)
    memo[id(value)] = out
    return out


def _container(value: Any, memo: dict[int, Any]) -> Any:
    cls = value.__class__
    if cls is dict:
        return {_value(k, memo): _value(v, memo) for k, v in value.items()}
    if cls is list:
        return [_value(v, memo) for v in value]
    if cls is tuple:
        return tuple(_value(v, memo) for v in value)
    if cls is set:
        return {_value(v, memo) for v in value}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        params = getattr(cls, "__dataclass_params__", None)
        if params is not None and params.frozen:
            try:
                return _shared((cls, value), value)
            except TypeError:  # an unhashable field: keep it apart
                return value
        memo[id(value)] = value  # cycles end here
        for f in dataclasses.fields(value):
            setattr(value, f.name, _value(getattr(value, f.name), memo))
        return value
    return value
