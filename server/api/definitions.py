"""REST: definitions (Karta documents) and Run:ai-style workload types.

``POST /api/v1/workload-types`` accepts Run:ai's registration body unchanged
(docs/definition-format.md section 10): ``name`` (the Kind), ``group`` and
``resourceInterfaces[].spec`` (one Karta spec per served version, each stored as one
definition named by the catalog slug rule); other fields (``categoryId``,
``priorityId``, ``preemptibility``, ...) are kept in an annotation and echoed. It also
accepts ``{"catalog": "<type>"}`` to register a built-in definition (a non-empty string; a
body with both ``catalog`` and Run:ai fields is a 400). Registration is an upsert (201
when new, 200 when replaced); every problem of every entry is reported together (422) and
nothing is stored unless all entries are valid. A ``resourceInterfaces[i].version``, when
given, must be the version of that entry's root kind.

Removal answers 409 for a built-in (catalog) definition or type, or one registered
elsewhere (a definition file, a Karta object when this server stores elsewhere), on both
``/workload-types/<id>`` and ``/definitions/<name>``.

Writes need ``create`` (registration, dry runs included) or ``delete`` (removal) on
``kartas.run.ai`` (403 otherwise, checked before anything is parsed or stored) and run as
the caller (``server.auth.writes``).

A workload type is a (group, kind) with one definition per version; its id is a UUID
derived from group and kind, so every server instance gives the same id.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from schema.definitions import check_expansion, unreadable_as_invalid
from server.api.auth import guard_of
from server.api.bodies import body_text, flag, json_object
from server.api.runtime import runtime_of
from server.auth.writes import writing_as
from server.definitions.load import check_definition
from server.definitions.parse import KARTA_API_VERSION
from server.definitions.registry import DefinitionRegistry, Entry
from server.errors import DefinitionNotFound, InvalidDefinition, InvalidRequest, Problem
from server.gvk import GVK
from server.state import Registrar, not_deletable

TYPE_ANNOTATION = "workload-map.run.ai/workload-type"
_KIND = re.compile(r"^[A-Z][a-z0-9]*([A-Z][a-z0-9]*)*$")
_GROUP = re.compile(r"^[a-z](?:[a-z0-9.-]*[a-z0-9])?$")
_ID_NAMESPACE = uuid.UUID("6f1c9a52-3d5e-4b8f-9a61-0c7e2d4b5a10")
RUNAI_FIELDS = ("name", "resourceInterfaces")
"""Fields that make a body a Run:ai workload type (not allowed beside ``catalog``)."""


def definition_dict(entry: Entry) -> dict[str, Any]:
    """JSON shape of a definition: identity, origin, state and the Karta manifest."""
    gvk = entry.gvk
    return {"name": entry.definition.name, "group": gvk.group, "version": gvk.version, "kind": gvk.kind,
            "origin": entry.origin, "shadowed": entry.shadowed, "registeredAt": entry.registered_at,
            "sourceVersion": entry.source_version, "components": [c.name for c in entry.definition.components],
            "manifest": entry.definition.manifest}


def type_id(group: str, kind: str) -> str:
    """The stable workload-type id of (group, kind)."""
    return str(uuid.uuid5(_ID_NAMESPACE, f"{group}/{kind}"))


def _types(registry: DefinitionRegistry) -> dict[tuple[str, str], list[Entry]]:
    types: dict[tuple[str, str], list[Entry]] = {}
    for entry in registry.entries():
        types.setdefault(entry.gvk.group_kind, []).append(entry)
    return types


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
        "resourceInterfaces": [{"version": e.gvk.version, "definition": e.definition.name, "origin": e.origin,
                                "spec": e.definition.manifest.get("spec")} for e in entries],
    }


def runai_documents(body: dict[str, Any]) -> list[dict[str, Any]]:
    """One Karta document per ``resourceInterfaces`` entry of a Run:ai body.

    Raises:
        InvalidDefinition: every problem of the body and of each entry, paths prefixed
            with ``resourceInterfaces[i].``.
    """
    problems: list[Problem] = []
    name, group = body.get("name"), body.get("group", "")
    if not isinstance(name, str) or not _KIND.match(name):
        problems.append(Problem("name", "must be the Kubernetes Kind (CamelCase, e.g. JobSet)"))
    if not isinstance(group, str) or (group and group != "core" and not _GROUP.match(group)):
        problems.append(Problem("group", "must be an API group such as jobset.x-k8s.io (empty or core for core)"))
    group = "" if group == "core" or not isinstance(group, str) else group
    interfaces = body.get("resourceInterfaces")
    if not isinstance(interfaces, list) or not interfaces:
        problems.append(Problem("resourceInterfaces", "must be a non-empty list of {spec: <Karta spec>}"))
        interfaces = []
    extra = json.dumps({k: v for k, v in body.items() if k != "resourceInterfaces"}, sort_keys=True)
    docs, versions = [], set()
    for index, item in enumerate(interfaces):
        prefix = f"resourceInterfaces[{index}]"
        if not isinstance(item, dict) or not isinstance(item.get("spec"), dict):
            problems.append(Problem(f"{prefix}.spec", "must be an object (a Karta spec)"))
            continue
        root_kind = ((item["spec"].get("structureDefinition") or {}).get("rootComponent") or {}).get("kind") or {}
        version = str(root_kind.get("version", "")) if isinstance(root_kind, dict) else ""
        slug = GVK(group, version or f"entry{index}", name if isinstance(name, str) else "x").slug
        doc = {"apiVersion": KARTA_API_VERSION, "kind": "Karta",
               "metadata": {"name": slug, "annotations": {TYPE_ANNOTATION: extra}}, "spec": item["spec"]}
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
        docs.append(doc)
    if problems:
        raise InvalidDefinition(problems, name=str(name or ""))
    return docs


async def _check_all(registrar: Registrar, docs: list[dict[str, Any]], prefixed: bool) -> None:
    problems: list[Problem] = []
    for index, doc in enumerate(docs):
        try:
            await registrar.check(doc)
        except InvalidDefinition as exc:
            prefix = f"resourceInterfaces[{index}]." if prefixed else ""
            problems += [Problem(prefix + p.path, p.message) for p in exc.problems]
    if problems:
        raise InvalidDefinition(problems)


async def create_workload_type(request: Request) -> JSONResponse:
    """Register a workload type from Run:ai's body, or a catalog type with ``{"catalog": "<type>"}``.

    ---
    summary: Register a workload type
    requestBody:
      required: true
      content:
        application/json:
          schema:
            oneOf:
              - $ref: '#/components/schemas/RunaiWorkloadType'
              - {type: object, required: [catalog], properties: {catalog: {type: string, example: jobset}}}
    responses:
      '201': {description: Created, content: {application/json: {schema: {$ref: '#/components/schemas/WorkloadType'}}}}
      '200': {description: Replaced (same group and kind), content: {application/json: {schema: {$ref: '#/components/schemas/WorkloadType'}}}}
      '400': {$ref: '#/components/responses/BadRequest'}
      '404': {$ref: '#/components/responses/NotFound'}
      '409': {$ref: '#/components/responses/Conflict'}
      '422': {$ref: '#/components/responses/Invalid'}
      '503': {$ref: '#/components/responses/NotReady'}
    """
    runtime = runtime_of(request)
    registrar = runtime.require_registrar()
    async with writing_as(guard_of(request), "create"):
        with unreadable_as_invalid():
            return await _create_workload_type(request, registrar)


async def _create_workload_type(request: Request, registrar: Registrar) -> JSONResponse:
    runtime = runtime_of(request)
    body = await json_object(request)
    if "catalog" in body:
        mixed = [f for f in RUNAI_FIELDS if f in body]
        if mixed:
            raise InvalidRequest(f"give either catalog or a Run:ai workload type ({', '.join(mixed)}), not both")
        if not isinstance(body["catalog"], str) or not body["catalog"].strip():
            raise InvalidRequest("catalog must be a non-empty string naming a built-in type (e.g. jobset)")
        docs, prefixed = [runtime.registry.catalog.find(body["catalog"]).definition.manifest], False
    else:
        docs, prefixed = runai_documents(body), True
    await _check_all(registrar, docs, prefixed)
    outcomes = [await registrar.register(doc) for doc in docs]
    gvk = outcomes[0].definition.gvk
    entries = _types(runtime.registry).get(gvk.group_kind, [])
    status = 201 if any(o.created for o in outcomes) else 200
    return JSONResponse(type_dict(gvk.group, gvk.kind, entries), status_code=status)


async def list_workload_types(request: Request) -> JSONResponse:
    """Workload types in force (built-in ones too unless ``externalTypesOnly``).

    ---
    summary: List workload types
    parameters:
      - {name: externalTypesOnly, in: query, schema: {type: boolean, default: false}, description: only registered (non-catalog) types}
    responses:
      '200': {description: Workload types, content: {application/json: {schema: {type: object, properties: {items: {type: array, items: {$ref: '#/components/schemas/WorkloadType'}}, count: {type: integer}}}}}}
    """
    external = flag(request, "externalTypesOnly")
    items = [type_dict(g, k, entries) for (g, k), entries in sorted(_types(runtime_of(request).registry).items())
             if not external or any(e.origin != "catalog" for e in entries)]
    return JSONResponse({"items": items, "count": len(items)})


def _find_type(request: Request) -> tuple[str, str, list[Entry]]:
    wanted = request.path_params["id"]
    for (group, kind), entries in _types(runtime_of(request).registry).items():
        if type_id(group, kind) == wanted:
            return group, kind, entries
    raise DefinitionNotFound(f"no workload type with id {wanted!r}")


async def get_workload_type(request: Request) -> JSONResponse:
    """One workload type by id.

    ---
    summary: Get a workload type
    parameters:
      - {name: id, in: path, required: true, schema: {type: string, format: uuid}}
    responses:
      '200': {description: The workload type, content: {application/json: {schema: {$ref: '#/components/schemas/WorkloadType'}}}}
      '404': {$ref: '#/components/responses/NotFound'}
    """
    return JSONResponse(type_dict(*_find_type(request)))


async def delete_workload_type(request: Request) -> JSONResponse:
    """Remove every registered definition of a workload type (the catalog entry, if any, applies again).

    ---
    summary: Delete a workload type
    parameters:
      - {name: id, in: path, required: true, schema: {type: string, format: uuid}}
    responses:
      '200': {description: The type as it was, content: {application/json: {schema: {$ref: '#/components/schemas/WorkloadType'}}}}
      '404': {$ref: '#/components/responses/NotFound'}
      '409': {$ref: '#/components/responses/Conflict'}
      '503': {$ref: '#/components/responses/NotReady'}
    """
    registrar = runtime_of(request).require_registrar()
    async with writing_as(guard_of(request), "delete"):
        return await _delete_workload_type(request, registrar)


async def _delete_workload_type(request: Request, registrar: Registrar) -> JSONResponse:
    group, kind, entries = _find_type(request)
    before = type_dict(group, kind, entries)
    mine = [e for e in registrar.registry.registered(registrar.store.origin) if e.gvk.group_kind == (group, kind)]
    if not mine:
        raise not_deletable(entries[0].gvk)
    for entry in mine:
        await registrar.unregister(entry.key)
    return JSONResponse(before)


async def create_definition(request: Request) -> JSONResponse:
    """Register a Karta definition (YAML or JSON body); ``dryRun=true`` only validates it.

    ---
    summary: Register a definition
    parameters:
      - {name: dryRun, in: query, schema: {type: boolean, default: false}}
    requestBody:
      required: true
      content:
        application/yaml: {schema: {$ref: '#/components/schemas/Karta'}}
        application/json: {schema: {$ref: '#/components/schemas/Karta'}}
    responses:
      '201': {description: Registered, content: {application/json: {schema: {$ref: '#/components/schemas/Registration'}}}}
      '200': {description: 'Replaced, or valid (dry run)', content: {application/json: {schema: {$ref: '#/components/schemas/Registration'}}}}
      '400': {$ref: '#/components/responses/BadRequest'}
      '409': {$ref: '#/components/responses/Conflict'}
      '422': {$ref: '#/components/responses/Invalid'}
      '503': {$ref: '#/components/responses/NotReady'}
    """
    registrar = runtime_of(request).require_registrar()
    dry_run = flag(request, "dryRun")
    async with writing_as(guard_of(request), "create"):
        text = await body_text(request)
        check_expansion(text)
        with unreadable_as_invalid():
            outcome = await registrar.register(text, dry_run=dry_run)
    entry = outcome.entry or Entry(outcome.definition, registrar.store.origin, outcome.definition.name)
    status = 201 if outcome.created and not dry_run else 200
    return JSONResponse({"definition": definition_dict(entry), "created": outcome.created and not dry_run,
                         "dryRun": dry_run}, status_code=status)


async def list_definitions(request: Request) -> JSONResponse:
    """Definitions in force, registered ones another one shadows, and skipped (invalid) stored ones.

    ---
    summary: List definitions
    responses:
      '200': {description: Definitions, content: {application/json: {schema: {$ref: '#/components/schemas/DefinitionList'}}}}
    """
    runtime = runtime_of(request)
    entries = list(runtime.registry.entries()) + [e for e in runtime.registry.registered() if e.shadowed]
    skipped = [s.to_dict() for s in runtime.registrar.skipped.values()] if runtime.registrar else []
    return JSONResponse({"items": [definition_dict(e) for e in entries], "count": len(entries), "skipped": skipped})


def _named(request: Request) -> Entry:
    name = request.path_params["name"]
    registry = runtime_of(request).registry
    for entry in [*registry.entries(), *registry.registered()]:
        if entry.definition.name == name or entry.key == name:
            return entry
    raise DefinitionNotFound(f"no definition named {name!r}")


async def get_definition(request: Request) -> JSONResponse:
    """One definition by name.

    ---
    summary: Get a definition
    parameters:
      - {name: name, in: path, required: true, schema: {type: string}}
    responses:
      '200': {description: The definition, content: {application/json: {schema: {$ref: '#/components/schemas/Definition'}}}}
      '404': {$ref: '#/components/responses/NotFound'}
    """
    return JSONResponse(definition_dict(_named(request)))


async def delete_definition(request: Request) -> JSONResponse:
    """Remove a registered definition by name (built-in ones, and ones registered elsewhere, cannot be
    removed: 409).

    ---
    summary: Delete a definition
    parameters:
      - {name: name, in: path, required: true, schema: {type: string}}
    responses:
      '200': {description: The removed definition, content: {application/json: {schema: {$ref: '#/components/schemas/Definition'}}}}
      '404': {$ref: '#/components/responses/NotFound'}
      '409': {$ref: '#/components/responses/Conflict'}
      '503': {$ref: '#/components/responses/NotReady'}
    """
    registrar = runtime_of(request).require_registrar()
    async with writing_as(guard_of(request), "delete"):
        return JSONResponse(definition_dict(await registrar.unregister(request.path_params["name"])))
