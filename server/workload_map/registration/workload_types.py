"""Run:ai-style workload types: the read model and the registration body translation.

A workload type is a (group, kind) with one definition per version; its id is a UUID
derived from group and kind, so every server instance gives the same id.

:func:`runai_documents` translates Run:ai's registration body unchanged
(docs/definition-format.md section 10): ``name`` (the Kind), ``group`` and ``resourceInterfaces[].spec`` (one Karta
spec per served version, each one definition named by the catalog slug rule); other fields
(``categoryId``, ``priorityId``, ``preemptibility``, ...) are kept in an annotation and
echoed by :func:`type_dict`, and so are the other fields of each ``resourceInterfaces[]``
entry (annotation :data:`INTERFACE_ANNOTATION`). :func:`register_workload_type` also accepts ``{"catalog":
"<type>"}`` for a built-in definition. Nothing is stored unless every entry is valid.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from workload_map.definitions.load import check_definition
from workload_map.definitions.parse import KARTA_API_VERSION
from workload_map.definitions.registry import DefinitionRegistry, Entry
from workload_map.errors import DefinitionNotFound, InvalidDefinition, InvalidRequest, Problem
from workload_map.gvk import GVK
from workload_map.registration.guards import unreadable_as_invalid
from workload_map.registration.registrar import Registrar, not_deletable

TYPE_ANNOTATION = "workload-map.run.ai/workload-type"
INTERFACE_ANNOTATION = "workload-map.run.ai/resource-interface"
"""Annotation keeping the fields of a ``resourceInterfaces[]`` entry other than ``spec`` (JSON)."""
_KIND = re.compile(r"^[A-Z][a-z0-9]*([A-Z][a-z0-9]*)*$")
_GROUP = re.compile(r"^[a-z](?:[a-z0-9.-]*[a-z0-9])?$")
_ID_NAMESPACE = uuid.UUID("6f1c9a52-3d5e-4b8f-9a61-0c7e2d4b5a10")
RUNAI_FIELDS = ("name", "resourceInterfaces")
"""Fields that make a body a Run:ai workload type (not allowed beside ``catalog``)."""


def type_id(group: str, kind: str) -> str:
    """The stable workload-type id (a UUID string) of (group, kind)."""
    return str(uuid.uuid5(_ID_NAMESPACE, f"{group}/{kind}"))


def workload_types(registry: DefinitionRegistry) -> dict[tuple[str, str], list[Entry]]:
    """The definitions in force, grouped by (group, kind)."""
    types: dict[tuple[str, str], list[Entry]] = {}
    for entry in registry.entries():
        types.setdefault(entry.gvk.group_kind, []).append(entry)
    return types


def find_type(registry: DefinitionRegistry, wanted: str) -> tuple[str, str, list[Entry]]:
    """The (group, kind, definitions) of the workload type with id ``wanted``.

    Raises:
        DefinitionNotFound: no type in force has that id.
    """
    for (group, kind), entries in workload_types(registry).items():
        if type_id(group, kind) == wanted:
            return group, kind, entries
    raise DefinitionNotFound(f"no workload type with id {wanted!r}")


def type_dict(group: str, kind: str, entries: list[Entry]) -> dict[str, Any]:
    """JSON shape of a workload type (Run:ai read model plus our fields)."""
    registered = [e for e in entries if e.origin != "catalog"]
    extra: dict[str, Any] = {}
    for entry in registered:
        raw = (entry.definition.manifest.get("metadata", {}).get("annotations") or {}).get(TYPE_ANNOTATION)
        if raw:
            try:
                extra.update(json.loads(raw))
            except ValueError:
                pass
    times = sorted(e.registered_at for e in registered if e.registered_at)
    return {
        **{k: v for k, v in extra.items() if k not in ("name", "group", "id")},
        "id": type_id(group, kind), "name": kind, "group": group,
        "origin": registered[0].origin if registered else "catalog",
        "createdAt": times[0] if times else None, "updatedAt": times[-1] if times else None,
        "resourceInterfaces": [{**_annotation(e, INTERFACE_ANNOTATION), "version": e.gvk.version,
                                "definition": e.definition.name, "origin": e.origin,
                                "spec": e.definition.manifest.get("spec")} for e in entries],
    }


def _annotation(entry: Entry, name: str) -> dict[str, Any]:
    """The JSON object kept in annotation ``name`` of ``entry``'s definition ({} when none)."""
    raw = (entry.definition.manifest.get("metadata", {}).get("annotations") or {}).get(name)
    try:
        value = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _identity_problems(name: Any, group: Any) -> list[Problem]:
    problems = []
    if not isinstance(name, str) or not _KIND.fullmatch(name):
        problems.append(Problem("name", "must be the Kubernetes Kind (CamelCase, e.g. JobSet)"))
    if not isinstance(group, str) or (group and group != "core" and not _GROUP.fullmatch(group)):
        problems.append(Problem("group", "must be an API group such as jobset.x-k8s.io (empty or core for core)"))
    return problems


def _entry_document(body: dict[str, Any], index: int, item: dict[str, Any], group: str,
                    versions: set[str], problems: list[Problem]) -> dict[str, Any]:
    """The Karta document of ``resourceInterfaces[index]``; its problems go into ``problems``."""
    name, prefix = body.get("name"), f"resourceInterfaces[{index}]"
    root_kind = ((item["spec"].get("structureDefinition") or {}).get("rootComponent") or {}).get("kind") or {}
    version = str(root_kind.get("version", "")) if isinstance(root_kind, dict) else ""
    # the stored name derives from group and kind: a bad group or kind is reported once on its
    # own field, so the name is built from a placeholder instead (no derived name error)
    slug_group = group if not group or _GROUP.fullmatch(group) else "invalid.group"
    slug_kind = name if isinstance(name, str) and _KIND.fullmatch(name) else "Invalid"
    slug = GVK(slug_group, version or f"entry{index}", slug_kind).slug
    extra = json.dumps({k: v for k, v in body.items() if k != "resourceInterfaces"}, sort_keys=True)
    annotations = {TYPE_ANNOTATION: extra}
    kept = {k: v for k, v in item.items() if k != "spec"}
    if kept:
        annotations[INTERFACE_ANNOTATION] = json.dumps(kept, sort_keys=True)
    doc = {"apiVersion": KARTA_API_VERSION, "kind": "Karta",
           "metadata": {"name": slug, "annotations": annotations}, "spec": item["spec"]}
    definition, found = check_definition(doc)
    problems += [Problem(f"{prefix}.{p.path}" if p.path else prefix, p.message) for p in found]
    if definition is not None:
        kind_path = f"{prefix}.spec.structureDefinition.rootComponent.kind"
        if definition.gvk.kind != name:
            problems.append(Problem(f"{kind_path}.kind", f"must equal name {name!r}"))
        if definition.gvk.group != group:
            problems.append(Problem(f"{kind_path}.group", f"must equal group {group!r}"))
        if definition.gvk.version in versions:
            problems.append(Problem(f"{kind_path}.version", f"version {definition.gvk.version} given twice"))
        versions.add(definition.gvk.version)
    root_version = definition.gvk.version if definition is not None else version
    given = item.get("version")
    if given is not None and (not isinstance(given, str) or (root_version and given != root_version)):
        problems.append(Problem(f"{prefix}.version", f"must equal the version of the spec's root kind "
                                                     f"({root_version or 'not given'}), got {given!r}"))
    return doc


def runai_documents(body: dict[str, Any]) -> list[dict[str, Any]]:
    """One Karta document per ``resourceInterfaces`` entry of a Run:ai body.

    Raises:
        InvalidDefinition: every problem of the body and of each entry, paths prefixed
            with ``resourceInterfaces[i].``.
    """
    name, group = body.get("name"), body.get("group", "")
    problems = _identity_problems(name, group)
    group = "" if group == "core" or not isinstance(group, str) else group
    interfaces = body.get("resourceInterfaces")
    if not isinstance(interfaces, list) or not interfaces:
        problems.append(Problem("resourceInterfaces", "must be a non-empty list of {spec: <Karta spec>}"))
        interfaces = []
    docs: list[dict[str, Any]] = []
    versions: set[str] = set()
    for index, item in enumerate(interfaces):
        if not isinstance(item, dict) or not isinstance(item.get("spec"), dict):
            problems.append(Problem(f"resourceInterfaces[{index}].spec", "must be an object (a Karta spec)"))
            continue
        docs.append(_entry_document(body, index, item, group, versions, problems))
    if problems:
        raise InvalidDefinition(problems, name=str(name or ""))
    return docs


def _type_documents(registry: DefinitionRegistry, body: dict[str, Any]) -> tuple[list[Any], bool]:
    """The documents a body registers, and whether problem paths get the entry prefix."""
    if "catalog" not in body:
        return list(runai_documents(body)), True
    mixed = [f for f in RUNAI_FIELDS if f in body]
    if mixed:
        raise InvalidRequest(f"give either catalog or a Run:ai workload type ({', '.join(mixed)}), not both")
    if not isinstance(body["catalog"], str) or not body["catalog"].strip():
        raise InvalidRequest("catalog must be a non-empty string naming a built-in type (e.g. jobset)")
    return [registry.catalog.find(body["catalog"]).definition.manifest], False


async def _check_all(registrar: Registrar, docs: list[Any], prefixed: bool) -> None:
    problems: list[Problem] = []
    for index, doc in enumerate(docs):
        try:
            await registrar.check(doc)
        except InvalidDefinition as exc:
            prefix = f"resourceInterfaces[{index}]." if prefixed else ""
            problems += [Problem(prefix + p.path, p.message) for p in exc.problems]
    if problems:
        raise InvalidDefinition(problems)


async def register_workload_type(registrar: Registrar, body: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """Register a Run:ai workload-type body, or ``{"catalog": "<type>"}``, as an upsert.

    Returns:
        The workload type as :func:`type_dict` shows it, and True when any definition was new.

    Raises:
        InvalidRequest: ``catalog`` mixed with Run:ai fields, or not a non-empty string.
        DefinitionNotFound: ``catalog`` names no built-in type.
        InvalidDefinition: every problem of every entry (nothing is stored then).
        Conflict / StoreError: see :meth:`Registrar.register`.
    """
    with unreadable_as_invalid():
        docs, prefixed = _type_documents(registrar.registry, body)
        await _check_all(registrar, docs, prefixed)
        outcomes = [await registrar.register(doc) for doc in docs]
    gvk = outcomes[0].definition.gvk
    entries = workload_types(registrar.registry).get(gvk.group_kind, [])
    return type_dict(gvk.group, gvk.kind, entries), any(o.created for o in outcomes)


async def unregister_workload_type(registrar: Registrar, wanted: str) -> dict[str, Any]:
    """Remove every definition of type ``wanted`` this registrar's store holds.

    Returns:
        The type as it was before the removal.

    Raises:
        DefinitionNotFound: no type has id ``wanted``.
        Conflict: the type is built in or registered elsewhere (:func:`not_deletable`).
        StoreError: the store could not be written.
    """
    group, kind, entries = find_type(registrar.registry, wanted)
    before = type_dict(group, kind, entries)
    mine = [e for e in registrar.registry.registered(registrar.store.origin) if e.gvk.group_kind == (group, kind)]
    if not mine:
        raise not_deletable(entries[0].gvk)
    for entry in mine:
        await registrar.unregister(entry.key)
    return before
