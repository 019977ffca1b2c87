"""REST: definitions (Karta documents) and Run:ai-style workload types.

``POST /api/v1/workload-types`` accepts Run:ai's registration body unchanged
(docs/definition-format.md section 10; translated by ``workload_map.registration.workload_types``): ``name``
(the Kind), ``group`` and ``resourceInterfaces[].spec`` (one Karta spec per served
version, each stored as one definition named by the catalog slug rule); other fields
(``categoryId``, ``priorityId``, ``preemptibility``, ...) are kept in an annotation and
echoed. It also accepts ``{"catalog": "<type>"}`` to register a built-in definition (a non-empty string; a
body with both ``catalog`` and Run:ai fields is a 400). Registration is an upsert (201
when new, 200 when replaced); every problem of every entry is reported together (422) and
nothing is stored unless all entries are valid. A ``resourceInterfaces[i].version``, when
given, must be the version of that entry's root kind.

Removal answers 409 for a built-in (catalog) definition or type, or one registered
elsewhere (a definition file, a Karta object when this server stores elsewhere), on both
``/workload-types/<id>`` and ``/definitions/<name>``.

Writes need ``create`` (registration, dry runs included) or ``delete`` (removal) on
``kartas.run.ai`` (403 otherwise, checked before anything is parsed or stored) and run as
the caller (``workload_map.auth.writes``).

A workload type is a (group, kind) with one definition per version; its id is a UUID
derived from group and kind, so every server instance gives the same id.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse

from workload_map.api.auth import guard_of
from workload_map.api.bodies import body_object, body_text, flag
from workload_map.api.filters import refuse_unknown
from workload_map.api.runtime import runtime_of
from workload_map.auth.writes import writing_as
from workload_map.service.lookup import definition_named, definitions_in_force
from workload_map.registration.registrar import register_document
from workload_map.service.rows import definition_dict
from workload_map.registration.workload_types import (
    find_type,
    register_workload_type,
    type_dict,
    unregister_workload_type,
    workload_types,
)


async def create_workload_type(request: Request) -> JSONResponse:
    """Register a workload type from Run:ai's body, or a catalog type with ``{"catalog": "<type>"}``.

    ---
    summary: Register a workload type
    parameters:
      - {name: cluster, in: query, schema: {type: string, minLength: 1}, description: 'the cluster (context) whose Karta objects to change (default: the first)'}
    requestBody:
      required: true
      content:
        application/json:
          schema:
            oneOf:
              - $ref: '#/components/schemas/RunaiWorkloadType'
              - {type: object, required: [catalog], properties: {catalog: {type: string, example: jobset}}}
        application/yaml:
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
    refuse_unknown(request, ("cluster",))
    registrar = runtime_of(request).require_registrar(request.query_params.get("cluster") or None)
    async with writing_as(guard_of(request), "create"):
        shown, created = await register_workload_type(registrar, await body_object(request))
    return JSONResponse(shown, status_code=201 if created else 200)


async def list_workload_types(request: Request) -> JSONResponse:
    """Workload types in force (built-in ones too unless ``externalTypesOnly``).

    ---
    summary: List workload types
    parameters:
      - {name: externalTypesOnly, in: query, schema: {type: boolean, default: false}, description: only registered (non-catalog) types}
    responses:
      '200': {description: Workload types, content: {application/json: {schema: {type: object, properties: {items: {type: array, items: {$ref: '#/components/schemas/WorkloadType'}}, count: {type: integer}}}}}}
    """
    refuse_unknown(request, ("externalTypesOnly",))
    external = flag(request, "externalTypesOnly")
    items = [type_dict(g, k, entries) for (g, k), entries in sorted(workload_types(runtime_of(request).registry).items())
             if not external or any(e.origin != "catalog" for e in entries)]
    return JSONResponse({"items": items, "count": len(items)})


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
    refuse_unknown(request, ())
    return JSONResponse(type_dict(*find_type(runtime_of(request).registry, request.path_params["id"])))


async def delete_workload_type(request: Request) -> JSONResponse:
    """Remove every registered definition of a workload type (the catalog entry, if any, applies again).

    ---
    summary: Delete a workload type
    parameters:
      - {name: id, in: path, required: true, schema: {type: string, format: uuid}}
      - {name: cluster, in: query, schema: {type: string, minLength: 1}, description: 'the cluster (context) whose Karta objects to change (default: the first)'}
    responses:
      '200': {description: The type as it was, content: {application/json: {schema: {$ref: '#/components/schemas/WorkloadType'}}}}
      '404': {$ref: '#/components/responses/NotFound'}
      '409': {$ref: '#/components/responses/Conflict'}
      '503': {$ref: '#/components/responses/NotReady'}
    """
    refuse_unknown(request, ("cluster",))
    registrar = runtime_of(request).require_registrar(request.query_params.get("cluster") or None)
    async with writing_as(guard_of(request), "delete"):
        return JSONResponse(await unregister_workload_type(registrar, request.path_params["id"]))


async def create_definition(request: Request) -> JSONResponse:
    """Register a Karta definition (YAML or JSON body); ``dryRun=true`` only validates it.

    ---
    summary: Register a definition
    parameters:
      - {name: dryRun, in: query, schema: {type: boolean, default: false}}
      - {name: cluster, in: query, schema: {type: string, minLength: 1}, description: 'the cluster (context) whose Karta objects to change (default: the first)'}
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
    refuse_unknown(request, ("dryRun", "cluster"))
    registrar = runtime_of(request).require_registrar(request.query_params.get("cluster") or None)
    dry_run = flag(request, "dryRun")
    async with writing_as(guard_of(request), "create"):
        outcome = await register_document(registrar, await body_text(request), dry_run=dry_run)
    entry = registrar.entry_of(outcome)
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
    refuse_unknown(request, ())
    runtime = runtime_of(request)
    entries = definitions_in_force(runtime.registry, include_shadowed=True)
    skipped = [s.to_dict() for s in runtime.registrar.skipped.values()] if runtime.registrar else []
    return JSONResponse({"items": [definition_dict(e) for e in entries], "count": len(entries), "skipped": skipped})


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
    refuse_unknown(request, ())
    return JSONResponse(definition_dict(definition_named(runtime_of(request).registry, request.path_params["name"])))


async def delete_definition(request: Request) -> JSONResponse:
    """Remove a registered definition by name.

    Built-in ones, and ones registered elsewhere, cannot be removed: 409.

    ---
    summary: Delete a definition
    parameters:
      - {name: name, in: path, required: true, schema: {type: string}}
      - {name: cluster, in: query, schema: {type: string, minLength: 1}, description: 'the cluster (context) whose Karta objects to change (default: the first)'}
    responses:
      '200': {description: The removed definition, content: {application/json: {schema: {$ref: '#/components/schemas/Definition'}}}}
      '404': {$ref: '#/components/responses/NotFound'}
      '409': {$ref: '#/components/responses/Conflict'}
      '503': {$ref: '#/components/responses/NotReady'}
    """
    refuse_unknown(request, ("cluster",))
    registrar = runtime_of(request).require_registrar(request.query_params.get("cluster") or None)
    async with writing_as(guard_of(request), "delete"):
        return JSONResponse(definition_dict(await registrar.unregister(request.path_params["name"])))
