"""JSON documents edited by location, and the RFC 6902 JSON Patch between two versions (pure).

``diff`` emits ``add``/``remove``/``replace`` ops (https://www.rfc-editor.org/rfc/rfc6902):
objects key by key, lists element by element when the length is kept, appended items as
``add .../-``, any other list change as one ``replace``. ``with_precondition`` puts
``replace /metadata/resourceVersion`` first: the Kubernetes API server then runs the patch as
an update at that version and answers 409 Conflict when the object has moved on.
"""

from __future__ import annotations

from typing import Any

from workload_map.errors import InvalidRequest
from workload_map.resolution.paths import Location, pointer


def set_at(obj: Any, location: Location, value: Any) -> None:
    """Set ``value`` at ``location``, creating missing objects on the way.

    Raises:
        InvalidRequest: a list index out of range or a scalar on the way.
    """
    for i, part in enumerate(location):
        last = i == len(location) - 1
        if isinstance(part, int):
            if not isinstance(obj, list) or not 0 <= part < len(obj):
                raise InvalidRequest(f"cannot write {pointer(location)}: index {part} does not exist")
            if last:
                obj[part] = value
            else:
                obj = obj[part]
        elif isinstance(obj, dict):
            if last:
                obj[part] = value
            else:
                if obj.get(part) is None:
                    obj[part] = {}
                obj = obj[part]
        else:
            raise InvalidRequest(f"cannot write {pointer(location)}: {pointer(location[:i])} is not an object")


def diff(old: Any, new: Any, location: Location = ()) -> list[dict[str, Any]]:
    """RFC 6902 operations turning ``old`` into ``new`` (lists: appended items or whole replace)."""
    if isinstance(old, dict) and isinstance(new, dict):
        ops: list[dict[str, Any]] = []
        for key in old:
            if key not in new:
                ops.append({"op": "remove", "path": pointer((*location, key))})
        for key, value in new.items():
            if key not in old:
                ops.append({"op": "add", "path": pointer((*location, key)), "value": value})
            elif old[key] != value:
                ops.extend(diff(old[key], value, (*location, key)))
        return ops
    if isinstance(old, list) and isinstance(new, list) and old != new:
        if len(new) == len(old):
            return [op for i, (a, b) in enumerate(zip(old, new)) for op in diff(a, b, (*location, i))]
        if len(new) > len(old) and new[:len(old)] == old:
            return [{"op": "add", "path": pointer((*location, "-")), "value": v} for v in new[len(old):]]
    if old == new:
        return []
    return [{"op": "replace", "path": pointer(location), "value": new}]


def with_precondition(obj: dict[str, Any], ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``ops`` preceded by the resourceVersion precondition (empty when nothing changes)."""
    version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
    if not ops:
        return []
    return [{"op": "replace", "path": "/metadata/resourceVersion", "value": version}, *ops] if version else ops
