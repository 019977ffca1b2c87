"""The pod change a caller asks for, validated: labels, scheduling fields, container env/resources.

Body shape (REST ``PATCH .../pod-template`` and the GraphQL ``change`` argument)::

    {"components": ["replicatedjob"], "instances": ["worker"],
     "labels": {"team": "a", "old": null}, "annotations": {...}, "nodeSelector": {...},
     "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
     "priorityClassName": "high", "schedulerName": "kai-scheduler",
     "containers": [{"name": "trainer", "env": [{"name": "NCCL_DEBUG", "value": "INFO"}],
                     "resources": {"limits": {"nvidia.com/gpu": "8"}}}],
     "resourceVersion": "12345"}

Label and nodeSelector keys and values follow the Kubernetes label rules, annotation keys
the annotation rules (``workload_map.definitions.names``), so a snapshot refuses what an API
server would; the merged annotations of a template total at most 256 KiB
(``workload_map.resolution.writes``). Maps merge key by key (``null`` removes a key, as a JSON merge patch does: RFC 7386);
tolerations are added unless an equal one is present; container env entries replace the
entry of the same name or are appended; ``resources.requests`` / ``resources.limits``
merge by resource name. ``components`` / ``instances`` narrow the selection (default: every
component with a pod definition, every instance). ``resourceVersion`` is the version the
caller saw (precondition; default: the version read just before the write).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from msgspec import Struct

from workload_map.definitions.names import annotation_key_problem, label_key_problem, label_value_problem
from workload_map.errors import InvalidRequest

MAP_FIELDS = ("labels", "annotations", "nodeSelector")
STRING_FIELDS = ("priorityClassName", "schedulerName")
KNOWN = frozenset({*MAP_FIELDS, *STRING_FIELDS, "tolerations", "containers", "components", "instances",
                   "resourceVersion"})


class ContainerChange(Struct, frozen=True):
    """Changes to one container, found by ``name``."""

    name: str
    env: tuple[dict[str, Any], ...] = ()
    resources: dict[str, dict[str, Any]] | None = None


class PodChange(Struct, frozen=True):
    """A validated change (see the module docstring for each field's rule)."""

    maps: tuple[tuple[str, dict[str, str | None]], ...] = ()
    strings: tuple[tuple[str, str], ...] = ()
    tolerations: tuple[dict[str, Any], ...] = ()
    containers: tuple[ContainerChange, ...] = ()
    components: tuple[str, ...] = ()
    instances: tuple[str, ...] = ()
    resource_version: str | None = None

    @property
    def is_empty(self) -> bool:
        """True when nothing would change."""
        return not (self.maps or self.strings or self.tolerations or self.containers)


def parse_change(body: Mapping[str, Any]) -> PodChange:
    """Validate a change body.

    Raises:
        InvalidRequest: an unknown field, a wrong type (the message names the field) or
            nothing to change.
    """
    unknown = sorted(set(body) - KNOWN)
    if unknown:
        raise InvalidRequest(f"unknown field {unknown[0]!r}; allowed: {', '.join(sorted(KNOWN))}")
    maps = tuple((name, _string_map(body[name], name)) for name in MAP_FIELDS if name in body)
    strings = tuple((name, _string(body[name], name)) for name in STRING_FIELDS if name in body)
    tolerations = tuple(_objects(body.get("tolerations", []), "tolerations"))
    containers = tuple(_container(c, f"containers[{i}]") for i, c in enumerate(_objects(body.get("containers", []),
                                                                                          "containers")))
    change = PodChange(maps, strings, tolerations, containers, _names(body.get("components"), "components"),
                       _names(body.get("instances"), "instances"),
                       _string(body["resourceVersion"], "resourceVersion") if body.get("resourceVersion") else None)
    if change.is_empty:
        raise InvalidRequest("nothing to change: give labels, annotations, nodeSelector, tolerations, "
                             "priorityClassName, schedulerName or containers")
    return change


def _string(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidRequest(f"{field} must be a non-empty string")
    return value


def _string_map(value: Any, field: str) -> dict[str, str | None]:
    """A map of ``labels``, ``annotations`` or ``nodeSelector``; a key set (not removed) obeys its rules.

    Raises:
        InvalidRequest: not an object of strings or nulls, or a key or value Kubernetes
            refuses (the message names the field, the key and the reason).
    """
    if not isinstance(value, dict):
        raise InvalidRequest(f"{field} must be an object of strings")
    key_problem = annotation_key_problem if field == "annotations" else label_key_problem
    for key, item in value.items():
        if item is not None and not isinstance(item, str):
            raise InvalidRequest(f"{field}.{key} must be a string or null")
        reason = key_problem(key) if item is not None else None
        if reason:
            raise InvalidRequest(f"{field}: key {key!r} is not a valid {_NOUN[field]} key: {reason}")
        reason = label_value_problem(item) if item is not None and field != "annotations" else None
        if reason:
            raise InvalidRequest(f"{field}.{key}: value {item!r}: {reason}")
    return dict(value)


_NOUN = {"labels": "label", "nodeSelector": "label", "annotations": "annotation"}


def _objects(value: Any, field: str) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise InvalidRequest(f"{field} must be a list of objects")
    return list(value)


def _names(value: Any, field: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise InvalidRequest(f"{field} must be a list of names")
    return tuple(value)


def _container(raw: dict[str, Any], field: str) -> ContainerChange:
    extra = sorted(set(raw) - {"name", "env", "resources"})
    if extra:
        raise InvalidRequest(f"{field}.{extra[0]}: unknown field; allowed: name, env, resources")
    env = _objects(raw.get("env", []), f"{field}.env")
    for i, entry in enumerate(env):
        _string(entry.get("name"), f"{field}.env[{i}].name")
    resources = raw.get("resources")
    if resources is not None:
        if not isinstance(resources, dict) or set(resources) - {"requests", "limits"} \
                or not all(isinstance(v, dict) for v in resources.values()):
            raise InvalidRequest(f"{field}.resources must be {{requests: {{...}}, limits: {{...}}}}")
    if not env and not resources:
        raise InvalidRequest(f"{field}: give env or resources")
    return ContainerChange(_string(raw.get("name"), f"{field}.name"), tuple(env), resources)
