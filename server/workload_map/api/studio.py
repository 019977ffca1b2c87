"""REST: the definition studio's evaluation, ``POST /api/v1/studio/evaluate``.

The body names a Karta (YAML or JSON text) and what to evaluate it on: ``objects``
(YAML/JSON text of Kubernetes objects, or a JSON array of them) or ``workload`` (a live
workload's identity: its root object, descendants and pods are read from the cache, with
the caller's visibility; pods only where the caller may get pods). The answer
(``workload_map.resolution.studio``) gives the validation findings with their field paths,
each jq path's output, the matched phases and the resolved tree. Nothing is stored:
registering goes through ``POST /api/v1/definitions`` (access control applies there).

Bounds: the body is capped by the server's body size limit (``--max-body-bytes``); the
route is an expensive one for load shedding (``workload_map.api.load``); at most
:data:`AT_ONCE` evaluations run at once; each is one job of the resolver workers
(``worker.StudioJob`` through the registrar's ``Sandbox``: the started service's pool, no
jq in the serving process), under the resolver's time budget (``resolver.timeout_s``,
``--resolution-timeout``), memory limit, kill and crash policy.
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from workload_map.api.auth import guard_of
from workload_map.api.bodies import json_object
from workload_map.api.runtime import Runtime, runtime_of
from workload_map.auth.scope import pod_namespaces, workload_scope
from workload_map.definitions.load import load_documents
from workload_map.errors import DefinitionError, InvalidRequest, WorkloadNotFound
from workload_map.materialization.sandbox import Sandbox, job_id
from workload_map.materialization.worker import StudioJob

AT_ONCE = 2
MAX_OBJECTS = 2000
_running = asyncio.Semaphore(AT_ONCE)


def _string(body: dict[str, Any], name: str, *, required: bool = False) -> str | None:
    value = body.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidRequest(f"{name} must be a non-empty string")
    return value


def _given_objects(value: Any) -> list[dict[str, Any]]:
    """Objects from YAML/JSON text or a JSON array; ``kind: List`` documents are flattened.

    Raises:
        InvalidRequest: not text or an array, not objects, or more than ``MAX_OBJECTS``.
    """
    docs = load_documents(value, source="objects") if isinstance(value, str) else value
    if not isinstance(docs, list):
        raise InvalidRequest("objects must be YAML/JSON text or an array of Kubernetes objects")
    flat: list[Any] = []
    for doc in docs:
        items = doc.get("items") if isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List") else None
        flat += items if isinstance(items, list) else [doc]
    for index, obj in enumerate(flat):
        if not isinstance(obj, dict) or not obj.get("kind") or not obj.get("apiVersion"):
            raise InvalidRequest(f"objects[{index}] must be a Kubernetes object with apiVersion and kind")
    if len(flat) > MAX_OBJECTS:
        raise InvalidRequest(f"objects holds {len(flat)} objects; at most {MAX_OBJECTS}")
    return flat


async def _live_objects(request: Request, runtime: Runtime, ref: Any) -> tuple[list[dict[str, Any]], str]:
    """The cached root object, descendants and (where visible) pods of a live workload; its name.

    Raises:
        InvalidRequest: ``workload`` is not ``{namespace?, group, kind, name, cluster?}``.
        WorkloadNotFound: no such workload, or the caller may not see it.
    """
    if not isinstance(ref, dict) or not all(isinstance(ref.get(k), str) for k in ("group", "kind", "name")):
        raise InvalidRequest("workload must be an object {namespace, group, kind, name, cluster}")
    namespace = ref.get("namespace") or None
    group = "" if ref["group"] == "core" else ref["group"]
    service = runtime.require_service()
    allow = await workload_scope(guard_of(request), service, namespace, group, ref["kind"])
    view = service.workload(namespace, group, ref["kind"], ref["name"], allow=allow, cluster=ref.get("cluster") or None)
    readers = runtime.cluster_readers()
    reader = readers.get(view.cluster) or next(iter(readers.values()), None)
    root = reader.by_uid(view.uid) if reader is not None else None
    if reader is None or root is None:
        raise WorkloadNotFound(f"workload {ref['kind']} {namespace}/{ref['name']} is not in the cache")
    related = [dict(o) for o in reader.descendants(view.uid)]
    visible = await pod_namespaces(guard_of(request), [view.namespace])
    if visible is not None and view.namespace not in visible:
        related = [o for o in related if not (o.get("kind") == "Pod" and o.get("apiVersion") == "v1")]
    return [dict(root), *related], view.name


async def run_evaluation(sandbox: Sandbox, text: str, objects: list[dict[str, Any]], root: str | None) -> dict[str, Any]:
    """Run ``workload_map.resolution.studio.evaluate`` as one job of ``sandbox`` and return its answer.

    Raises:
        DefinitionError: the evaluation ran out of the budget, crashed or failed.
    """
    async with _running:
        (outcome,) = await sandbox.run([StudioJob(job_id("studio"), text, tuple(objects), root)])
    if outcome.status == "ok":
        answer: dict[str, Any] = outcome.view
        return answer
    if outcome.status == "timeout":
        running = (outcome.error or "").partition(" while evaluating ")[2]
        raise DefinitionError(f"the evaluation did not finish within the resolver's budget of {sandbox.timeout_s:g} s "
                              f"(a jq path that does not terminate?{' it was evaluating ' + running if running else ''})")
    raise DefinitionError(f"the evaluation {'crashed' if outcome.status == 'crashed' else 'failed'}: {outcome.error}")


async def evaluate(request: Request) -> JSONResponse:
    """Evaluate a Karta on given objects or on a live workload (the definition studio); stores nothing.

    ---
    summary: Evaluate a definition (studio)
    requestBody:
      required: true
      content:
        application/json:
          schema:
            type: object
            required: [definition]
            properties:
              definition: {type: string, description: 'the Karta, YAML or JSON text'}
              objects: {description: 'Kubernetes objects: YAML/JSON text (several documents, or a List) or an array', oneOf: [{type: string}, {type: array, items: {type: object}}]}
              workload: {type: object, description: 'a live workload instead of objects', required: [group, kind, name], properties: {namespace: {type: string}, group: {type: string}, kind: {type: string}, name: {type: string}, cluster: {type: string}}}
              root: {type: string, description: 'name of the root object among several of the kind'}
    responses:
      '200': {description: 'Findings, path outputs, phases and the resolved view', content: {application/json: {schema: {type: object}}}}
      '400': {$ref: '#/components/responses/BadRequest'}
      '404': {$ref: '#/components/responses/NotFound'}
      '413': {description: Body too large, content: {application/json: {schema: {$ref: '#/components/schemas/Error'}}}}
      '422': {description: 'The evaluation ran out of time or crashed', content: {application/json: {schema: {$ref: '#/components/schemas/Error'}}}}
      '503': {$ref: '#/components/responses/NotReady'}
    """
    runtime = runtime_of(request)
    body = await json_object(request)
    text = str(_string(body, "definition", required=True))
    root = _string(body, "root")
    if body.get("workload") is not None:
        objects, root = await _live_objects(request, runtime, body["workload"])
    else:
        objects = _given_objects(body.get("objects", []))
    answer = await run_evaluation(runtime.require_registrar().jq_sandbox(), text, objects, root)
    return JSONResponse(answer)
