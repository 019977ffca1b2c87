"""Exact counts: the count fields of a workload's spec are checked before any jq reads them.

jq computes with IEEE doubles: ``nan`` turns into ``null`` (unset, so a default of 1 applies),
``.inf`` into the largest double, a product of two negative counts is a plausible positive
number, and ``2.5`` replicas would be truncated to 2. So before the definition's paths run,
every count field of the root's ``spec`` (any depth, pod templates included) is read in
Python, where integers are arbitrary precision and nothing wraps:

* a number under a key of :data:`COUNT_FIELDS` must be an integer (``3`` or ``3.0``) in
  ``0..MAX_COUNT``; a negative, fractional, non-finite or larger value is an error naming the
  field path (``spec.replicatedJobs[0].replicas``);
* a non-finite number (``nan``, ``inf``) anywhere in ``spec`` is an error (no field may carry one);
* strings and booleans are left to the definition's paths (a numeric string is parsed there).

A workload with any such error gets phase ``Undefined`` (never Running): its figures would be
computed from a number that is not a count. Sums of counts are Python integers (exact); a
workload total beyond :data:`MAX_COUNT` is the same kind of error (:func:`check_total`).

Source of the bound: Kubernetes declares every replica, parallelism and size field int32
(``format: int32`` in the CRDs in ``../shared/crds`` and in the core API), so no operator can
act on a larger value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from workload_map.resolution.extract import MAX_REPLICAS
from workload_map.resolution.view import ResolutionError

#: The sane bound of one count, and of a workload's total (int32, the Kubernetes count type).
MAX_COUNT = MAX_REPLICAS

#: Keys whose numeric values are pod or group counts in the catalog's operators' specs.
COUNT_FIELDS = frozenset({
    "replicas", "minReplicas", "maxReplicas", "parallelism", "completions", "numNodes", "size",
    "numOfHosts", "instances", "minAvailable", "minMember", "workers", "numWorkers", "slotsPerWorker",
    "data", "dataLocal", "pipeline", "tensor", "expert", "maxRestarts", "backoffLimit",
})

#: Walk bound: nodes visited per object (a Kubernetes object is at most ~1.5 MB of JSON).
MAX_NODES = 200_000


def check_counts(root: Mapping[str, Any]) -> list[ResolutionError]:
    """Errors for the malformed count fields and non-finite numbers under ``root["spec"]``.

    Returns:
        One :class:`ResolutionError` per bad field, ``field`` = its path (``spec.a[0].b``).
    """
    spec = root.get("spec")
    if not isinstance(spec, (dict, list)):
        return []
    errors: list[ResolutionError] = []
    stack: list[tuple[str, Any]] = [("spec", spec)]  # containers only: a leaf's path is built when it is bad
    visited = 1
    while stack:
        path, value = stack.pop()
        is_dict = isinstance(value, dict)
        if visited + len(value) > MAX_NODES:  # the bound: the rest is not read
            break
        visited += len(value)
        for key, item in value.items() if is_dict else enumerate(value):
            cls = item.__class__
            if cls is str:  # most leaves: nothing to check
                continue
            if cls is dict or cls is list or isinstance(item, (dict, list)):
                stack.append((f"{path}.{key}" if is_dict else f"{path}[{key}]", item))
            elif (cls is int or cls is float or isinstance(item, (int, float))) and cls is not bool:
                problem = _problem(item, is_dict and str(key).rsplit(".", 1)[-1] in COUNT_FIELDS)
                if problem:
                    where = f"{path}.{key}" if is_dict else f"{path}[{key}]"
                    errors.append(ResolutionError(f"{where} is {item!r}: {problem}", field=where))
    return sorted(errors, key=lambda e: e.field)


def _problem(value: int | float, is_count: bool) -> str:
    """Why ``value`` cannot be used (``""`` when it can)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "not a finite number"
    if not is_count:
        return ""
    if isinstance(value, float) and not value.is_integer():
        return "a count must be an integer"
    if value < 0:
        return "a count cannot be negative"
    if value > MAX_COUNT:
        return f"beyond the count bound {MAX_COUNT} (int32)"
    return ""


def check_total(total: int, field: str) -> ResolutionError | None:
    """An error when an exact sum of counts exceeds :data:`MAX_COUNT` (None otherwise)."""
    if 0 <= total <= MAX_COUNT:
        return None
    return ResolutionError(f"{field} totals {total}: beyond the count bound {MAX_COUNT} (int32)", field=field)
