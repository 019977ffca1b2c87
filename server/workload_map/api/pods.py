"""REST: the scheduler view of one pod (``GET /api/v1/namespaces/{ns}/pods/{name}/workload``).

Read from the materialized views only (``workload_map.service.pods``): the store's pod index gives
the workload, nothing is resolved. Visibility as for one workload (``workload_map.auth.scope``):
a pod whose workload kind the caller may not list is answered exactly like a pod of no
workload (404); the pod's phase and node are shown only where the caller may get pods.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse

from workload_map.api.auth import guard_of
from workload_map.api.filters import refuse_unknown
from workload_map.api.runtime import runtime_of
from workload_map.auth.scope import may_see, pod_namespaces
from workload_map.errors import WorkloadNotFound


async def get_pod_workload(request: Request) -> JSONResponse:
    """The pod's top-level workload, component, instance, replica key and gangs.

    ---
    summary: Get the workload, component, instance and gang of one pod (scheduler view)
    parameters:
      - {name: namespace, in: path, required: true, schema: {type: string}}
      - {name: name, in: path, required: true, schema: {type: string}, description: the pod's name}
      - {name: cluster, in: query, schema: {type: string, minLength: 1}, description: 'the cluster of the pod (default: the first that has it)'}
    responses:
      '200': {description: 'The pod placement: {pod, workload, component, instance, replicaKey, gangGroups}', content: {application/json: {schema: {type: object}}}}
      '404': {$ref: '#/components/responses/NotFound'}
      '503': {$ref: '#/components/responses/NotReady'}
    """
    refuse_unknown(request, ("cluster",))
    service = runtime_of(request).require_service()
    namespace, name = request.path_params["namespace"], request.path_params["name"]
    placement = service.pod_placement(namespace, name, cluster=request.query_params.get("cluster") or None)
    guard = guard_of(request)
    if placement is None or not await may_see(guard, service.reader, placement.view):
        raise WorkloadNotFound(f"pod {namespace}/{name} belongs to no workload")
    visible = await pod_namespaces(guard, [namespace])
    return JSONResponse(placement.to_dict(pod_details=visible is None or namespace in visible))
