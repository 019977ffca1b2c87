"""Per-component extraction from the workload object: instance ids, scale, pod specs.

Rules (docs/definition-format.md section 7):

* no ``instanceIdPath`` -> exactly one instance with id ``""``; otherwise its outputs,
  stringified (Go ``%v``), are the ids, and an empty id is an error;
* every per-instance path is zipped with the ids **by position**; a count mismatch is an
  error for that component (``instance ids count (n) does not match results count (m)``);
* scale: the three paths are evaluated separately; numbers become ints, numeric strings
  are parsed base 10, ``null`` is unset, anything else is an error naming the value;
* pod specs: ``podTemplateSpecPath`` yields ``{metadata, spec}``; ``podSpecPath`` a bare
  PodSpec (+ ``metadataPath``); fragments are assembled into a PodSpec (containers from
  ``containersPath`` + ``containerPath``; ``resourcesPath`` only when there is no
  container).
"""

from __future__ import annotations

from typing import Any

from msgspec import Struct

from workload_map.definitions.model import Component, SpecDefinition
from workload_map.errors import JqEvaluationError
from workload_map.jq import Document, compile_program, stringify


class ExtractionError(Exception):
    """A component's paths do not line up; ``field`` names the definition field."""

    def __init__(self, message: str, field: str = "", expression: str = "") -> None:
        super().__init__(message)
        self.field = field
        self.expression = expression


class CountError(ExtractionError):
    """A scale path gave a value that is not a count (the workload's phase becomes Undefined)."""


class Scale(Struct):
    """Scale of one instance; ``None`` means unset."""

    replicas: int | None = None
    min: int | None = None
    max: int | None = None

    @property
    def desired(self) -> int:
        """Desired pods: replicas, else min, else 1 (upstream CLI rule)."""
        if self.replicas is not None:
            return max(self.replicas, 0)
        if self.min is not None:
            return max(self.min, 0)
        return 1

    @property
    def effective_min(self) -> int:
        """Gang minimum: min if > 0, else replicas if > 0, else 0 (subtree-scale rule)."""
        if self.min is not None and self.min > 0:
            return self.min
        if self.replicas is not None and self.replicas > 0:
            return self.replicas
        return 0


def component_expressions(component: Component) -> list[str]:
    """The jq programs :func:`instance_ids`, :func:`scales` and :func:`pod_templates` may run on the root."""
    out = [component.instance_id_path] if component.instance_id_path else []
    if component.scale is not None:
        sd = component.scale
        out += [e for e in (sd.replicas_path, sd.min_replicas_path, sd.max_replicas_path) if e]
    spec = component.spec
    if spec is not None:
        out += [e for e in (spec.pod_template_spec_path, spec.pod_spec_path, spec.metadata_path) if e]
        out += [expr for _, expr in spec.fragments or ()]
    return out


def instance_ids(component: Component, doc: Document) -> list[str]:
    """Instance ids of ``component`` (``[""]`` without instanceIdPath).

    Raises:
        ExtractionError: an empty id; JqEvaluationError for jq failures.
    """
    if not component.instance_id_path:
        return [""]
    ids = [stringify(v) for v in compile_program(component.instance_id_path).all(doc)]
    if any(i in ("", "<nil>") for i in ids):
        raise ExtractionError(f"instance id path contained empty string values {ids}",
                              f"{component.path}.instanceIdPath", component.instance_id_path)
    return ids


def _zip(ids: list[str], outputs: list[Any], field: str, expression: str) -> list[Any]:
    if len(ids) != len(outputs):
        raise ExtractionError(f"instance ids count ({len(ids)}) does not match results count ({len(outputs)})",
                              field, expression)
    return outputs


#: Replica counts are int32 in Kubernetes (and upstream converts to int32).
MAX_REPLICAS = 2**31 - 1


def _to_int(value: Any, position: int, field: str, expression: str) -> int | None:
    """A replica count: numbers, or base-10 numeric strings; null is unset.

    Raises:
        CountError: not a number, not finite, not an integer, negative, or beyond int32.
    """
    if value is None:
        return None
    number: int | None = None
    if isinstance(value, float) and value == value and value not in (float("inf"), float("-inf")) \
            and not value.is_integer():
        raise CountError(f"value {value!r} at position {position} is not an integer", field, expression)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value == value and value not in (float("inf"), float("-inf")):
            number = int(value)
    elif isinstance(value, str) and value.isascii():
        try:
            number = int(value.strip(), 10)
        except ValueError:
            number = None
    if number is None:
        raise CountError(f"value {value!r} at position {position} is not a number", field, expression)
    if number < 0 or number > MAX_REPLICAS:
        raise CountError(f"value {value!r} at position {position} is out of range 0..{MAX_REPLICAS}", field,
                              expression)
    return number


def scales(component: Component, ids: list[str], doc: Document) -> list[Scale]:
    """One :class:`Scale` per instance (all unset without a scaleDefinition).

    Raises:
        ExtractionError: count mismatch or a non-numeric value; JqEvaluationError.
    """
    sd = component.scale
    if sd is None:
        return [Scale() for _ in ids]
    columns: dict[str, list[int | None]] = {}
    for name, expr in (("replicas", sd.replicas_path), ("min", sd.min_replicas_path), ("max", sd.max_replicas_path)):
        if expr:
            field = f"{component.path}.scaleDefinition.{name}{'Path' if name == 'replicas' else 'ReplicasPath'}"
            columns[name] = [_to_int(v, i, field, expr) for i, v in enumerate(compile_program(expr).all(doc))]
    count = max((len(v) for v in columns.values()), default=len(ids))
    if count != len(ids):
        raise ExtractionError(f"instance ids count ({len(ids)}) does not match results count ({count})",
                              f"{component.path}.scaleDefinition", "")
    return [Scale(*(columns[n][i] if n in columns and i < len(columns[n]) else None
                    for n in ("replicas", "min", "max"))) for i in range(count)]


def pod_specs(component: Component, ids: list[str], doc: Document) -> list[dict[str, Any] | None]:
    """The PodSpec dict of each instance (``None`` when not defined or null).

    Raises:
        ExtractionError: count mismatch or a value of the wrong type; JqEvaluationError.
    """
    return [spec for spec, _ in pod_templates(component, ids, doc)]


def pod_templates(component: Component, ids: list[str], doc: Document
                  ) -> list[tuple[dict[str, Any] | None, dict[str, Any]]]:
    """``(PodSpec or None, template annotations)`` of each instance.

    Annotations come from the PodTemplateSpec's ``metadata`` or from ``metadataPath``
    (``{}`` for fragments and when absent); shared-GPU annotations are read from them.

    Raises:
        ExtractionError: count mismatch or a value of the wrong type; JqEvaluationError.
    """
    spec = component.spec
    if spec is None or spec.variants == 0:
        return [(None, {}) for _ in ids]
    base = f"{component.path}.specDefinition"
    if spec.pod_template_spec_path:
        field = f"{base}.podTemplateSpecPath"
        outs = _zip(ids, compile_program(spec.pod_template_spec_path).all(doc), field, spec.pod_template_spec_path)
        return [(_object(o, field, spec.pod_template_spec_path, "PodTemplateSpec", "spec"), _annotations(o))
                for o in outs]
    if spec.pod_spec_path:
        field = f"{base}.podSpecPath"
        outs = _zip(ids, compile_program(spec.pod_spec_path).all(doc), field, spec.pod_spec_path)
        specs = [_object(o, field, spec.pod_spec_path, "PodSpec", None) for o in outs]
        metas: list[Any] = [None] * len(specs)
        if spec.metadata_path:  # annotations only: a metadata path that does not line up adds none
            try:
                outputs = compile_program(spec.metadata_path).all(doc)
            except JqEvaluationError:
                outputs = []
            metas = outputs if len(outputs) == len(specs) else metas
        return [(s, _annotations({"metadata": m})) for s, m in zip(specs, metas)]
    return [(s, {}) for s in _fragmented(spec, ids, doc, f"{base}.fragmentedPodSpecDefinition")]


def _annotations(template: Any) -> dict[str, Any]:
    meta = template.get("metadata") if isinstance(template, dict) else None
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    return annotations if isinstance(annotations, dict) else {}


def _object(value: Any, field: str, expression: str, type_name: str, key: str | None) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ExtractionError(f"expected a {type_name} object, got {type(value).__name__}", field, expression)
    if key is None:
        return value
    inner = value.get(key)
    return inner if isinstance(inner, dict) else None


def _fragmented(spec: SpecDefinition, ids: list[str], doc: Document, base: str) -> list[dict[str, Any] | None]:
    values: dict[str, list[Any]] = {}
    for name, expr in spec.fragments or ():
        values[name] = compile_program(expr).all(doc)
    count = max((len(v) for v in values.values()), default=0)
    if count != len(ids):
        raise ExtractionError(f"instance ids count ({len(ids)}) does not match results count ({count})", base, "")
    out: list[dict[str, Any] | None] = []
    for i in range(count):
        def at(name: str) -> Any:
            column = values.get(name, [])
            return column[i] if i < len(column) else None
        containers = [c for c in (at("containersPath") or []) if isinstance(c, dict)] if isinstance(
            at("containersPath"), list) else []
        if isinstance(at("containerPath"), dict):
            containers.append(at("containerPath"))
        if not containers and isinstance(at("resourcesPath"), dict):
            containers = [{"name": "main", "resources": at("resourcesPath")}]
        pod: dict[str, Any] = {"containers": containers}
        for name, key in (("schedulerNamePath", "schedulerName"), ("priorityClassNamePath", "priorityClassName")):
            if isinstance(at(name), str):
                pod[key] = at(name)
        out.append(pod)
    return out


__all__ = ["CountError", "ExtractionError", "JqEvaluationError", "Scale", "instance_ids", "pod_specs", "pod_templates", "scales"]
