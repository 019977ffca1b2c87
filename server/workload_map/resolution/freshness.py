"""What the status evaluation may believe: the status's shape, condition order and staleness.

Rules (docs/definition-format.md section 7, "Status evaluation"):

* **Shape.** ``status`` must be an object when present, ``status.conditions`` a list of
  objects whose ``type`` (or the definition's type key) is a string, ``status.phase`` a string and ``status.state`` a string or an object (Volcano's). Anything
  else (conditions as a string, a numeric state) cannot be interpreted: the problem is
  reported naming the field and the phase is ``Undefined`` instead of a phase derived from
  defaults (a ladder whose every test fails on a string would read Initializing).
* **Order.** Conditions are presented to the status paths ordered by ``lastTransitionTime``
  (RFC 3339, oldest first; a condition without one sorts first; ties keep their place), so
  "the later one wins" means the one that changed last, whatever order the controller wrote.
* **Staleness.** A condition whose ``observedGeneration`` is behind the object's
  ``metadata.generation`` was computed for an older spec (Kubernetes API conventions,
  "Typical status properties": observedGeneration "represents the .metadata.generation that
  the condition was set based upon"; older means out of date). It is left out of what the
  status paths see and listed in the view with ``stale: "true"``. The spec is then the
  only word on the desired state, so a desired state there (``operatingMode``, ``suspend``)
  outranks a stale condition.
"""

from __future__ import annotations

from datetime import datetime, timezone
from collections.abc import Mapping
from typing import Any

from workload_map.resolution.view import ResolutionError


def shape_errors(root: Mapping[str, Any], type_field: str = "type") -> list[ResolutionError]:
    """Problems that make ``root``'s status uninterpretable (empty when it can be read).

    Args:
        root: the workload object.
        type_field: the condition key holding the type (``conditionsDefinition.typeFieldName``).
    """
    status = root.get("status")
    if status is None:
        return []
    if not isinstance(status, Mapping):
        return [_error("status", f"status is a {type(status).__name__}, not an object")]
    errors = [_error(f"status.{key}", f"status.{key} is a {type(status[key]).__name__} ({status[key]!r}), not a "
                     f"{'string' if key == 'phase' else 'string or object'}") for key, allowed in _SCALARS
              if status.get(key) is not None and not isinstance(status[key], allowed)]
    conditions = status.get("conditions")
    if conditions is not None and not isinstance(conditions, list):
        errors.append(_error("status.conditions", f"status.conditions is a {type(conditions).__name__}, not a list"))
    elif conditions:
        errors.extend(_error(f"status.conditions[{i}]", f"status.conditions[{i}] is not an object with a string "
                             f"{type_field}") for i, c in enumerate(conditions)
                      if not isinstance(c, Mapping) or not isinstance(c.get(type_field), str))
    return errors


#: Status fields whose type is known across the catalog's operators (Volcano's ``state`` is an object).
_SCALARS: tuple[tuple[str, type | tuple[type, ...]], ...] = (("phase", str), ("state", (str, Mapping)))


def _error(field: str, message: str) -> ResolutionError:
    return ResolutionError(f"status cannot be interpreted: {message}", field=field)


def fresh_view(root: Mapping[str, Any]) -> tuple[Mapping[str, Any], list[dict[str, Any]]]:
    """``(root as the status paths see it, the stale conditions)``.

    ``root`` itself is returned when its conditions are already in order and none is stale.
    """
    status = root.get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    if not isinstance(conditions, list) or not conditions:
        return root, []
    meta = root.get("metadata")
    generation = meta.get("generation") if isinstance(meta, Mapping) else None
    fresh: list[Any] = []
    stale: list[Any] = []
    for c in conditions:
        (stale if _behind(c, generation) else fresh).append(c)
    ordered = sorted(fresh, key=_changed_at)
    if not stale and all(a is b for a, b in zip(ordered, conditions)):
        return root, []
    assert isinstance(status, Mapping)
    return {**root, "status": {**status, "conditions": ordered}}, stale


def _behind(condition: Any, generation: Any) -> bool:
    if not isinstance(condition, Mapping) or not _is_int(generation):
        return False
    observed = condition.get("observedGeneration")
    return _is_int(observed) and bool(observed < generation)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_NEVER = datetime.min.replace(tzinfo=timezone.utc)


def _changed_at(condition: Any) -> datetime:
    """Sort key: the RFC 3339 ``lastTransitionTime`` (the earliest time when absent or unreadable)."""
    at = condition.get("lastTransitionTime") if isinstance(condition, Mapping) else None
    try:
        parsed = datetime.fromisoformat(at) if isinstance(at, str) else _NEVER
    except ValueError:
        return _NEVER
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def listed_stale(stale: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The view entries of stale conditions: their string type/status/reason/message and ``stale``."""
    return [{**{k: c[k] for k in ("type", "status", "reason", "message") if isinstance(c.get(k), str)},
             "stale": "true"} for c in stale if isinstance(c, Mapping) and isinstance(c.get("type"), str)]
