"""The OpenAPI 3.1 document: operations from handler docstrings plus shared components.

Handlers carry their operation as YAML after ``---`` in the docstring (starlette's
``SchemaGenerator``). ``/graphql`` (an ASGI app, not a function) is described here.
A path template's ``{name}`` that an operation does not declare is added as a required
string path parameter (OpenAPI 3.1 "Parameter Object": a path parameter must be
``required: true``; https://spec.openapis.org/oas/v3.1.0#parameter-object), so one handler
can serve ``/api/v1/workloads`` and ``/api/v1/namespaces/{namespace}/workloads``. The
document passes openapi-spec-validator (tests/api/test_openapi_valid.py).
"""

from __future__ import annotations

import copy
import re
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.schemas import SchemaGenerator

from workload_map.definitions.phases import Phase


def _error_response(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": {"$ref":
                                                                                     "#/components/schemas/Error"}}}}


_OBJECT = {"type": "object", "additionalProperties": True}

COMPONENTS: dict[str, Any] = {
    "schemas": {
        "Error": {"type": "object", "required": ["error", "message", "details"], "properties": {
            "error": {"type": "string", "description": "stable code (bad_request, workload_not_found, ...)"},
            "message": {"type": "string"},
            "details": {"type": "array", "items": {}, "description": "422: every problem as {path, message}"}}},
        "Problem": {"type": "object", "properties": {"path": {"type": "string"}, "message": {"type": "string"}}},
        "Phase": {"type": "string", "enum": [p.value for p in Phase]},
        "PhaseState": {"type": "object", "properties": {
            "phase": {"$ref": "#/components/schemas/Phase"},
            "phases": {"type": "array", "items": {"$ref": "#/components/schemas/Phase"}}}},
        "Workload": {**_OBJECT, "description": "The JSON view (WorkloadView.to_dict(), as `wmap describe -o json`)"},
        "WorkloadList": {"type": "object", "properties": {
            "items": {"type": "array", "items": _OBJECT}, "count": {"type": "integer"},
            "totalCount": {"type": "integer"}, "continue": {"type": ["string", "null"]}}},
        "Karta": {**_OBJECT, "description": "A run.ai/v1alpha1 Karta document (or a bare Karta spec)"},
        "Definition": {"type": "object", "properties": {
            "name": {"type": "string"}, "group": {"type": "string"}, "version": {"type": "string"},
            "kind": {"type": "string"}, "origin": {"type": "string", "enum": ["catalog", "cluster", "state", "file"]},
            "shadowed": {"type": "boolean"}, "registeredAt": {"type": "string"},
            "sourceVersion": {"type": "string"}, "components": {"type": "array", "items": {"type": "string"}},
            "manifest": {"$ref": "#/components/schemas/Karta"}}},
        "DefinitionList": {"type": "object", "properties": {
            "items": {"type": "array", "items": {"$ref": "#/components/schemas/Definition"}},
            "count": {"type": "integer"}, "skipped": {"type": "array", "items": _OBJECT}}},
        "Registration": {"type": "object", "properties": {
            "definition": {"$ref": "#/components/schemas/Definition"}, "created": {"type": "boolean"},
            "dryRun": {"type": "boolean"}}},
        "RunaiWorkloadType": {"type": "object", "required": ["name", "group", "resourceInterfaces"],
                              "additionalProperties": True, "properties": {
            "name": {"type": "string", "pattern": "^[A-Z][a-z0-9]*([A-Z][a-z0-9]*)*$"},
            "group": {"type": "string"}, "categoryId": {"type": "string"}, "priorityId": {"type": "string"},
            "preemptibility": {"type": "string", "enum": ["preemptible", "non-preemptible"]},
            "resourceInterfaces": {"type": "array", "minItems": 1, "items": {
                "type": "object", "required": ["spec"], "properties": {"spec": _OBJECT}}}}},
        "WorkloadType": {"type": "object", "additionalProperties": True, "properties": {
            "id": {"type": "string", "format": "uuid"}, "name": {"type": "string"}, "group": {"type": "string"},
            "origin": {"type": "string"}, "createdAt": {"type": ["string", "null"]},
            "updatedAt": {"type": ["string", "null"]}, "resourceInterfaces": {"type": "array", "items": _OBJECT}}},
    },
    "responses": {
        "BadRequest": _error_response("Malformed request (bad_request): a bad body, or a query parameter "
                                      "that is unknown, given twice (only kind, phase and namespace repeat) or an empty filter"),
        "NotFound": _error_response("Unknown workload, definition or type"),
        "Conflict": _error_response("Conflicts with the stored state"),
        "Invalid": _error_response("Invalid definition: every problem in details"),
        "NotReady": _error_response("Caches not synced yet, or the definition store is unavailable"),
        "Unauthorized": _error_response("No bearer token, or the API server does not accept it (auth kubernetes)"),
        "Forbidden": _error_response("The caller may not do this (SubjectAccessReview)"),
        "DeadlineExceeded": _error_response("The request did not finish within its time budget"),
        "PayloadTooLarge": _error_response("The request body exceeds the size limit"),
    },
    "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "description":
                                   "A Kubernetes bearer token (with --auth kubernetes), checked with a TokenReview"}},
}

_TEMPLATE = re.compile(r"{([^}/]+)}")

OPEN_PATHS = frozenset({"/livez", "/readyz", "/healthz", "/metrics"})
WRITES = frozenset({"post", "delete"})

GRAPHQL_PATH: dict[str, Any] = {
    "get": {"summary": "GraphiQL (browsers) or a GraphQL query via GET", "responses": {
        "200": {"description": "GraphiQL page or GraphQL response"}}},
    "post": {"summary": "GraphQL over HTTP; subscriptions via SSE (Accept: text/event-stream) or the "
                        "graphql-transport-ws WebSocket protocol on the same path",
             "requestBody": {"required": True, "content": {"application/json": {"schema": {
                 "type": "object", "required": ["query"], "properties": {
                     "query": {"type": "string"}, "variables": _OBJECT, "operationName": {"type": "string"}}}}}},
             "responses": {"200": {"description": "GraphQL response (errors inside the body)"}}},
}


def build_generator() -> SchemaGenerator:
    """The generator with our base document (info, components, /graphql)."""
    return SchemaGenerator({
        "openapi": "3.1.0",
        "info": {"title": "workload-map-server", "version": "0.1.0",
                 "description": "One uniform view of every distributed AI workload, driven by Karta definitions."},
        "components": COMPONENTS,
        "paths": {"/graphql": GRAPHQL_PATH},
    })


_GENERATOR = build_generator()


def _complete_path_parameters(path: str, operation: dict[str, Any]) -> None:
    """Declare every ``{name}`` of ``path`` that ``operation`` lacks (required string)."""
    parameters = operation.setdefault("parameters", [])
    declared = {p.get("name") for p in parameters if isinstance(p, dict) and p.get("in") == "path"}
    missing = [name for name in _TEMPLATE.findall(path) if name not in declared]
    operation["parameters"] = [{"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
                               for name in missing] + parameters
    if not operation["parameters"]:
        del operation["parameters"]


def openapi_document(routes: list[Any]) -> dict[str, Any]:
    """The OpenAPI document for ``routes`` (a fresh copy), with the answers every operation may give.

    Added: 401 and the bearer scheme except on the open paths, 403 on writes, 413 on
    bodies and 504 (time budget); undeclared path parameters are added too.

    Returns:
        The document as a JSON-ready dict (``openapi: 3.1.0``).
    """
    generator = SchemaGenerator(copy.deepcopy(_GENERATOR.base_schema))
    document = generator.get_schema(routes)
    for path, operations in document.get("paths", {}).items():
        for method, operation in operations.items():
            _complete_path_parameters(path, operation)
            responses = operation.setdefault("responses", {})
            responses.setdefault("504", {"$ref": "#/components/responses/DeadlineExceeded"})
            if method in ("post", "put", "patch"):
                responses.setdefault("413", {"$ref": "#/components/responses/PayloadTooLarge"})
            if path in OPEN_PATHS:
                continue
            operation.setdefault("security", [{"bearer": []}])
            responses.setdefault("401", {"$ref": "#/components/responses/Unauthorized"})
            if method in WRITES and path != "/graphql":
                responses.setdefault("403", {"$ref": "#/components/responses/Forbidden"})
    return document


async def openapi(request: Request) -> JSONResponse:
    """This document.

    ---
    summary: OpenAPI document
    responses:
      '200': {description: OpenAPI 3.1 JSON, content: {application/json: {schema: {type: object}}}}
    """
    return JSONResponse(openapi_document(request.app.routes))
