"""REST: act on one workload through its definition (pod templates, suspend, resume).

* ``PATCH .../workloads/{group}/{kind}/{name}/pod-template``: body as in
  ``workload_map.resolution.changes`` (labels, annotations, nodeSelector, tolerations,
  priorityClassName, schedulerName, containers[].env/resources; components/instances
  narrow the selection; resourceVersion is the precondition).
* ``POST .../suspend`` and ``POST .../resume``: the definition's suspendActions /
  resumeActions (422 without a suspendDefinition); optional body ``{"resourceVersion": "..."}``.

``?dryRun=true`` returns the patch and writes nothing. Answers are the service's
(``workload_map.service.actions``): ``appliedTo`` says whether the cluster or the in-memory
snapshot was changed. Errors: 400 bad body, 403 no ``patch`` on the resource, 404, 409
stale resourceVersion (nothing written), 422 a path that cannot be written through or a
missing suspendDefinition.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from workload_map.api.auth import guard_of
from workload_map.api.bodies import flag, json_object
from workload_map.api.filters import refuse_unknown
from workload_map.api.runtime import runtime_of
from workload_map.auth.scope import workload_scope
from workload_map.auth.writes import patching_as
from workload_map.errors import CacheNotReady, InvalidRequest
from workload_map.service.fleet import Fleet, route_write
from workload_map.service.actions import set_suspended, update_pod_templates

PARAMETERS = """
    parameters:
      - {name: namespace, in: path, required: true, schema: {type: string}}
      - {name: group, in: path, required: true, schema: {type: string}, description: 'API group, core for the core group'}
      - {name: kind, in: path, required: true, schema: {type: string}}
      - {name: name, in: path, required: true, schema: {type: string}}
      - {name: dryRun, in: query, schema: {type: boolean, default: false}, description: 'return the patch, write nothing'}
      - {name: cluster, in: query, schema: {type: string, minLength: 1}, description: 'the cluster (context) holding the workload; default the first that has it'}
"""


async def _context(request: Request) -> tuple[Any, Any, tuple[str, str, str, str], dict[str, Any]]:
    refuse_unknown(request, ("dryRun", "cluster"))
    runtime = runtime_of(request)
    service = runtime.require_service()
    p = request.path_params
    group = "" if p["group"] == "core" else p["group"]
    guard = guard_of(request)
    allow = await workload_scope(guard, service, p["namespace"], group, p["kind"])
    kwargs = {"dry_run": flag(request, "dryRun"), "allow": allow,
              "scope": partial(patching_as, guard, p["namespace"])}
    identity = (p["namespace"], group, p["kind"], p["name"])
    writer = None if isinstance(service, Fleet) else runtime.require_writer()  # a fleet: each member's
    service, writer = route_write(service, writer, identity, request.query_params.get("cluster") or None)
    if writer is None:
        raise CacheNotReady("workload writes are not available yet; retry shortly")
    return service, writer, identity, kwargs


async def _optional_body(request: Request) -> dict[str, Any]:
    if not (await request.body()).strip():
        return {}
    body = await json_object(request)
    extra = sorted(set(body) - {"resourceVersion"})
    if extra:
        raise InvalidRequest(f"unknown field {extra[0]!r}; allowed: resourceVersion")
    if "resourceVersion" in body and not isinstance(body["resourceVersion"], str):
        raise InvalidRequest("resourceVersion must be a string")
    return body


async def patch_pod_template(request: Request) -> JSONResponse:
    """Change the pod templates of the chosen components and instances.

    ---
    summary: Change a workload's pod templates through its definition
    requestBody:
      required: true
      content:
        application/json:
          schema:
            type: object
            additionalProperties: false
            properties:
              components: {type: array, items: {type: string}, description: component names (default every one with a pod definition)}
              instances: {type: array, items: {type: string}, description: instance ids (default all)}
              labels: {type: object, additionalProperties: {type: [string, 'null']}, description: merged; null removes}
              annotations: {type: object, additionalProperties: {type: [string, 'null']}}
              nodeSelector: {type: object, additionalProperties: {type: [string, 'null']}}
              tolerations: {type: array, items: {type: object}, description: added unless an equal one is present}
              priorityClassName: {type: string}
              schedulerName: {type: string}
              containers:
                type: array
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    env: {type: array, items: {type: object, required: [name]}}
                    resources: {type: object, properties: {requests: {type: object}, limits: {type: object}}}
              resourceVersion: {type: string, description: 'precondition: the version the caller saw (409 when stale)'}
    responses:
      '200': {description: 'Applied (or, dry run, the patch)', content: {application/json: {schema: {type: object}}}}
      '400': {$ref: '#/components/responses/BadRequest'}
      '404': {$ref: '#/components/responses/NotFound'}
      '409': {$ref: '#/components/responses/Conflict'}
      '422': {$ref: '#/components/responses/Invalid'}
    """
    service, writer, identity, kwargs = await _context(request)
    return JSONResponse(await update_pod_templates(service, writer, identity, await json_object(request), **kwargs))


async def suspend(request: Request) -> JSONResponse:
    """Suspend a workload (the definition's suspendActions).

    ---
    summary: Suspend a workload through its definition
    responses:
      '200': {description: 'Applied (or, dry run, the patch)', content: {application/json: {schema: {type: object}}}}
      '404': {$ref: '#/components/responses/NotFound'}
      '409': {$ref: '#/components/responses/Conflict'}
      '422': {$ref: '#/components/responses/Invalid'}
    """
    return await _suspend(request, True)


async def resume(request: Request) -> JSONResponse:
    """Resume a workload (the definition's resumeActions).

    ---
    summary: Resume a workload through its definition
    responses:
      '200': {description: 'Applied (or, dry run, the patch)', content: {application/json: {schema: {type: object}}}}
      '404': {$ref: '#/components/responses/NotFound'}
      '409': {$ref: '#/components/responses/Conflict'}
      '422': {$ref: '#/components/responses/Invalid'}
    """
    return await _suspend(request, False)


async def _suspend(request: Request, value: bool) -> JSONResponse:
    service, writer, identity, kwargs = await _context(request)
    version = (await _optional_body(request)).get("resourceVersion")
    return JSONResponse(await set_suspended(service, writer, identity, value, resource_version=version, **kwargs))


for _handler in (patch_pod_template, suspend, resume):
    _handler.__doc__ = (_handler.__doc__ or "").replace("    ---\n", "    ---" + PARAMETERS, 1)
