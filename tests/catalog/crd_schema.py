"""A small structural-schema checker for fixture objects against the operators' real CRDs.

The fixtures under ``tests/fixtures/objects`` are meant to be created in a real kube-apiserver
later, so every object whose GVK has a CRD in the shared folder (``<shared>/crds``) is checked
against that CRD's ``openAPIV3Schema`` the way the apiserver would treat it with
``fieldValidation=Strict``:

* CRD ``default`` values are applied first (the apiserver defaults before it validates);
* unknown fields are errors unless the schema preserves unknown fields (or is a map);
* ``type`` (with ``x-kubernetes-int-or-string``), ``enum``, ``required``, ``minimum`` /
  ``maximum``, ``minLength`` / ``maxLength``, ``minItems`` / ``maxItems``, ``format:
  date-time``, ``nullable`` are checked; CEL rules (``x-kubernetes-validations``),
  ``pattern`` and the value-only ``oneOf/anyOf/allOf/not`` are not;
* ``metadata`` of the object itself is the apiserver's ObjectMeta and is not checked here.

Only used by tests: no cluster, no network. The CRDs are third-party files read from the
shared folder and never copied into the repository.
"""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import json
import os
import re
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


_GROUP = re.compile(r"^  group: *(\S+)", re.M)
_KIND = re.compile(r"^    kind: *(\S+)", re.M)


@lru_cache(maxsize=None)
def _index(crd_dir: str) -> dict[tuple[str, str], Path]:
    """``(group, kind) -> CRD file``, read from the top-level ``spec.group`` and
    ``spec.names.kind`` lines without parsing the (large) files."""
    out: dict[tuple[str, str], Path] = {}
    for path in sorted(Path(crd_dir).glob("*.yaml")):
        head = path.read_text(encoding="utf-8")[:20000]
        group, kind = _GROUP.search(head), _KIND.search(head)
        if group and kind:
            out[(group.group(1).strip("'\""), kind.group(1).strip("'\""))] = path
    return out


@lru_cache(maxsize=None)
def _versions(path: Path) -> dict[str, dict[str, Any]]:
    """``version -> openAPIV3Schema`` of one CRD file.

    Parsing a CRD of a megabyte takes about a second, so the schemas are cached as JSON in the
    temporary directory, keyed by the file's content hash.
    """
    data = path.read_bytes()
    cache = Path(tempfile.gettempdir()) / "wmap-crd-schemas" / f"{hashlib.sha256(data).hexdigest()}.json"
    if cache.is_file():
        try:
            return json.loads(cache.read_text(encoding="utf-8"))
        except ValueError:
            pass
    doc = yaml.load(data, Loader=_Loader)
    out = {v["name"]: (v.get("schema") or {}).get("openAPIV3Schema") or {}
           for v in (doc.get("spec") or {}).get("versions", [])}
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(out), encoding="utf-8")
        tmp.replace(cache)
    except OSError:
        pass
    return out


def crd_schema(crd_dir: str | Path, group: str, version: str, kind: str) -> dict[str, Any] | None:
    """The ``openAPIV3Schema`` of ``group/version, Kind=kind`` in ``crd_dir``, or None."""
    path = _index(str(crd_dir)).get((group, kind))
    if path is None:
        return None
    return _versions(path).get(version)


def validate(obj: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """Every problem of ``obj`` against ``schema`` (empty list when valid)."""
    problems: list[str] = []
    value = copy.deepcopy(obj)
    _default(value, schema)
    _check(value, schema, "", problems, root=True)
    return problems


def _default(value: Any, schema: dict[str, Any]) -> None:
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for key, sub in props.items():
            if key not in value and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
            if key in value:
                _default(value[key], sub)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key, item in value.items():
                if key not in props:
                    _default(item, extra)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            _default(item, schema["items"])


def _type_ok(value: Any, schema: dict[str, Any]) -> bool:
    if schema.get("x-kubernetes-int-or-string"):
        return isinstance(value, (int, str)) and not isinstance(value, bool)
    wanted = schema.get("type")
    if wanted is None:
        return True
    return {
        "object": isinstance(value, dict),
        "array": isinstance(value, list),
        "string": isinstance(value, str),
        "boolean": isinstance(value, bool),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, (int, float)) and not isinstance(value, bool),
    }.get(wanted, True)


def _check(value: Any, schema: dict[str, Any], path: str, problems: list[str], *, root: bool = False) -> None:
    where = path or "<root>"
    if value is None:
        if not schema.get("nullable"):
            problems.append(f"{where}: null is not allowed")
        return
    if not _type_ok(value, schema):
        problems.append(f"{where}: expected {schema.get('type', 'int-or-string')}, got {type(value).__name__}")
        return
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            problems.append(f"{where}: {value} is below the minimum {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            problems.append(f"{where}: {value} is above the maximum {schema['maximum']}")
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            problems.append(f"{where}: shorter than {schema['minLength']}")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            problems.append(f"{where}: longer than {schema['maxLength']}")
        if schema.get("format") == "date-time" and not _is_datetime(value):
            problems.append(f"{where}: {value!r} is not an RFC 3339 date-time")
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            problems.append(f"{where}: fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            problems.append(f"{where}: more than {schema['maxItems']} items")
        items = schema.get("items")
        if isinstance(items, dict):
            for index, item in enumerate(value):
                _check(item, items, f"{path}[{index}]", problems)
    if isinstance(value, dict):
        _check_object(value, schema, path, problems, root=root)


def _check_object(value: dict[str, Any], schema: dict[str, Any], path: str, problems: list[str], *,
                  root: bool) -> None:
    props = schema.get("properties") or {}
    for key in schema.get("required") or []:
        if key not in value:
            problems.append(f"{path or '<root>'}: missing required field {key!r}")
    extra = schema.get("additionalProperties")
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    embedded = bool(schema.get("x-kubernetes-embedded-resource"))
    for key, item in value.items():
        sub_path = f"{path}.{key}" if path else key
        if key in props:
            if (root or embedded) and key == "metadata":
                continue  # ObjectMeta: validated by the apiserver itself, not by the CRD schema
            _check(item, props[key], sub_path, problems)
        elif isinstance(extra, dict):
            _check(item, extra, sub_path, problems)
        elif extra is True or preserve:
            continue
        elif (root or embedded) and key in ("apiVersion", "kind", "metadata"):
            continue
        else:
            problems.append(f"{sub_path}: unknown field")


def _is_datetime(text: str) -> bool:
    try:
        dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return False
    return "T" in text
