"""REST: workload lists, one workload's JSON view, its phase (optionally waiting for one).

The workload JSON is exactly ``WorkloadView.to_dict()``, the document ``wmap describe -o
json`` prints. The core API group is spelled ``core`` in paths. Each handler's docstring
carries its OpenAPI operation after ``---`` (read by ``workload_map.api.openapi``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from workload_map.api.auth import guard_of
from workload_map.api.bodies import duration, integer
from workload_map.api.errors import WaitTimeout
from workload_map.api.deadline import extend_deadline
from workload_map.api.filters import WORKLOAD_LIST_PARAMS, ListFilter, list_filter, refuse_unknown
from workload_map.api.runtime import runtime_of
from workload_map.auth.scope import Allow, hide_pod_details, list_scope, pod_namespaces, workload_scope
from workload_map.definitions.phases import Phase
from workload_map.errors import InvalidRequest, WorkloadNotFound
from workload_map.resolution import WorkloadView
from workload_map.service.reads import WorkloadReads
from workload_map.service.pagination import paginate
from workload_map.service.rows import phase_state, summary

DEFAULT_WAIT_S = 30.0
WAIT_GRACE_S = 5.0


def _group(path_group: str) -> str:
    return "" if path_group == "core" else path_group


def parse_phase(text: str, *, name: str) -> Phase:
    """A phase by name, case-insensitive.

    Raises:
        InvalidRequest: not one of the nine phases.
    """
    for phase in Phase:
        if phase.value.lower() == text.strip().lower():
            return phase
    raise InvalidRequest(f"{name} must be one of {', '.join(p.value for p in Phase)}, got {text!r}")


async def list_workloads(request: Request) -> JSONResponse:
    """List top-level workloads (one namespace, or all for /api/v1/workloads).

    The ``namespace`` path parameter of the namespaced route is added by
    ``workload_map.api.openapi`` (one docstring serves both routes).

    ---
    summary: List workloads
    parameters:
      - {name: kind, in: query, schema: {type: array, items: {type: string, minLength: 1}}, style: form, explode: true, description: 'any of these types: kind (case-insensitive, or its plural), kind.group, definition name or alias (repeated or comma-separated)'}
      - {name: group, in: query, schema: {type: string}, description: API group (core for the core group)}
      - {name: phase, in: query, schema: {type: array, items: {$ref: '#/components/schemas/Phase'}}, style: form, explode: true, description: any of these phases (repeated or comma-separated)}
      - {name: namespace, in: query, schema: {type: array, items: {type: string, minLength: 1}}, style: form, explode: true, description: 'any of these namespaces (the cluster-wide list only)'}
      - {name: labelSelector, in: query, schema: {type: string}, description: 'Kubernetes label selector on the root object (a=b,c!=d, k in (x,y), k notin (z), k, !k)'}
      - {name: definition, in: query, schema: {type: string, minLength: 1}}
      - {name: cluster, in: query, schema: {type: string, minLength: 1}, description: 'only this cluster (kubeconfig context)'}
      - {name: contains, in: query, schema: {type: string, maxLength: 253}, description: 'only names containing this text (case-insensitive)'}
      - {name: node, in: query, schema: {type: string, minLength: 1}, description: 'only workloads with a pod bound to this node (where the caller may get pods)'}
      - {name: limit, in: query, schema: {type: integer, minimum: 1, maximum: 500, default: 100}}
      - {name: continue, in: query, schema: {type: string}, description: cursor from the previous page}
      - {name: view, in: query, schema: {type: string, enum: [summary, full], default: summary}}
    responses:
      '200': {description: 'Page of workloads', content: {application/json: {schema: {$ref: '#/components/schemas/WorkloadList'}}}}
      '400': {$ref: '#/components/responses/BadRequest'}
      '503': {$ref: '#/components/responses/NotReady'}
    """
    runtime = runtime_of(request)
    service = runtime.require_service()
    q = request.query_params
    refuse_unknown(request, [p for p in WORKLOAD_LIST_PARAMS if p != "namespace" or "namespace" not in
                             request.path_params])
    wanted = list_filter(request, runtime.registry)
    group = _group(q["group"]) if q.get("group") is not None else None
    full = q.get("view", "summary")
    if full not in ("summary", "full"):
        raise InvalidRequest(f"view must be summary or full, got {full!r}")
    size, after = integer(request, "limit"), q.get("continue")
    paginate([], first=size, after=after, name="limit")  # bad paging input fails before any review
    one_kind = wanted.single_kind()
    one_namespace = next(iter(wanted.namespaces)) if wanted.namespaces and len(wanted.namespaces) == 1 else None
    filters: dict[str, Any] = {"namespace": request.path_params.get("namespace") or one_namespace,
                               "kind": one_kind[1] if one_kind else None,
                               "group": group if group is not None else (one_kind[0] if one_kind else None),
                               "definition": q.get("definition") or None}
    allow = await list_scope(guard_of(request), service, **filters)
    one_phase = next(iter(wanted.phases)).value if wanted.phases and len(wanted.phases) == 1 else None
    views = service.workloads(**filters, phase=one_phase, allow=allow, cluster=q.get("cluster") or None)
    if wanted != ListFilter():  # the service applied one value of each; "any of" and labels here
        readers = runtime.cluster_readers()
        views = [v for v in views if wanted.keeps(v, lambda view: _labels(readers, view))]
    views = _named(views, q.get("contains", ""))
    if q.get("node"):
        views = await _on_node(request, views, q["node"])
    page = paginate(views, first=size, after=after, name="limit")
    if full == "full":
        items = [await _full(request, v) for v in page.items]
    else:
        items = [summary(v) for v in page.items]
    return JSONResponse({"items": items, "count": len(items), "totalCount": page.total,
                         "continue": page.end_cursor if page.has_next else None})


def _labels(readers: dict[str, Any], view: WorkloadView) -> dict[str, str] | None:
    """The labels of ``view``'s root object, read from its cluster's cache."""
    reader = readers.get(view.cluster) or next(iter(readers.values()), None)
    root = reader.by_uid(view.uid) if reader is not None else None
    labels = ((root or {}).get("metadata") or {}).get("labels")
    return labels if isinstance(labels, dict) else None


def _named(views: list[WorkloadView], text: str) -> list[WorkloadView]:
    """The views whose name contains ``text`` (case-insensitive; all for an empty text).

    Raises:
        InvalidRequest: ``text`` longer than 253 characters (the longest Kubernetes name).
    """
    if len(text) > 253:
        raise InvalidRequest(f"contains must be at most 253 characters, got {len(text)}")
    wanted = text.strip().lower()
    return [v for v in views if wanted in v.name.lower()] if wanted else views


async def _on_node(request: Request, views: list[WorkloadView], node: str) -> list[WorkloadView]:
    """The views with a pod bound to ``node``, in namespaces where the caller may get pods."""
    on_node = [v for v in views if any(p.node == node for p in v.all_pods())]
    visible = await pod_namespaces(guard_of(request), [v.namespace for v in on_node])
    return on_node if visible is None else [v for v in on_node if v.namespace in visible]


async def _full(request: Request, view: WorkloadView) -> dict[str, Any]:
    """``view.to_dict()``, without pod details unless the caller may get pods in its namespace."""
    visible = await pod_namespaces(guard_of(request), [view.namespace])
    doc = view.to_dict()
    return doc if visible is None or view.namespace in visible else hide_pod_details(doc)


async def _scope(request: Request, service: WorkloadReads) -> Allow | None:
    p = request.path_params
    return await workload_scope(guard_of(request), service, p["namespace"], _group(p["group"]), p["kind"])


def _workload(request: Request, service: WorkloadReads, allow: Allow | None) -> WorkloadView:
    p = request.path_params
    return service.workload(p["namespace"], _group(p["group"]), p["kind"], p["name"], allow=allow,
                            cluster=request.query_params.get("cluster") or None)


async def get_workload(request: Request) -> JSONResponse:
    """One workload's JSON view (the same document as ``wmap describe -o json``).

    ---
    summary: Get one workload
    parameters:
      - {name: namespace, in: path, required: true, schema: {type: string}}
      - {name: group, in: path, required: true, schema: {type: string}, description: 'API group, core for the core group'}
      - {name: kind, in: path, required: true, schema: {type: string}}
      - {name: name, in: path, required: true, schema: {type: string}}
      - {name: cluster, in: query, schema: {type: string, minLength: 1}, description: 'the cluster holding it (default: the first that has it)'}
    responses:
      '200': {description: The workload view, content: {application/json: {schema: {$ref: '#/components/schemas/Workload'}}}}
      '404': {$ref: '#/components/responses/NotFound'}
      '503': {$ref: '#/components/responses/NotReady'}
    """
    refuse_unknown(request, ("cluster",))
    service = runtime_of(request).require_service()
    return JSONResponse(await _full(request, _workload(request, service, await _scope(request, service))))


async def get_phase(request: Request) -> JSONResponse:
    """A workload's phase; with ``wait`` hold the request until that phase is among its phases.

    ---
    summary: Get (or wait for) a workload's phase
    parameters:
      - {name: namespace, in: path, required: true, schema: {type: string}}
      - {name: group, in: path, required: true, schema: {type: string}}
      - {name: kind, in: path, required: true, schema: {type: string}}
      - {name: name, in: path, required: true, schema: {type: string}}
      - {name: wait, in: query, schema: {$ref: '#/components/schemas/Phase'}, description: phase to wait for}
      - {name: timeout, in: query, schema: {type: string, default: 30s}, description: 'wait bound: 60s, 500ms, 2m (at most 600s)'}
      - {name: cluster, in: query, schema: {type: string, minLength: 1}, description: 'the cluster holding it (default: the first that has it)'}
    responses:
      '200': {description: Current phases, content: {application/json: {schema: {$ref: '#/components/schemas/PhaseState'}}}}
      '400': {$ref: '#/components/responses/BadRequest'}
      '404': {$ref: '#/components/responses/NotFound'}
      '408': {description: 'The phase was not reached in time (details hold the last phases)', content: {application/json: {schema: {$ref: '#/components/schemas/Error'}}}}
      '429': {description: 'The client already holds its share of waits (--max-waits-per-client)', content: {application/json: {schema: {$ref: '#/components/schemas/Error'}}}}
      '503': {$ref: '#/components/responses/NotReady'}
    """
    refuse_unknown(request, ("wait", "timeout", "cluster"))
    runtime = runtime_of(request)
    service = runtime.require_service()
    q = request.query_params
    target = parse_phase(q["wait"], name="wait") if q.get("wait") else None
    maximum = runtime.settings.http.max_wait_s
    timeout = duration(q.get("timeout", f"{min(DEFAULT_WAIT_S, maximum):g}s"), name="timeout", maximum=maximum)
    allow = await _scope(request, service)
    if target is None:
        return JSONResponse(phase_state(_workload(request, service, allow)))
    extend_deadline(request, timeout + WAIT_GRACE_S)
    with runtime.waits.hold(request.client.host if request.client else ""):
        view = await wait_for_phase(service, request, target, timeout, allow=allow)
    return JSONResponse(phase_state(view))


async def wait_for_phase(service: WorkloadReads, request: Request, target: Phase, timeout: float, *,
                         allow: Allow | None = None) -> WorkloadView:
    """Wait on the service's change feed until ``target`` is among the workload's phases.

    Only materialized views are read (no resolution here): the subscriber asks the feed for
    this workload's changes only, and is released in ``finally``. ``allow`` is the caller's
    visibility (decided once, up front).

    Raises:
        WorkloadNotFound: the workload does not exist (or disappears while waiting).
        WaitTimeout: ``timeout`` seconds passed; details hold the last phases.
    """
    view = _workload(request, service, allow)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    subscriber = service.feed.subscribe(namespace=view.namespace, uid=view.uid)
    try:
        async with asyncio.timeout_at(deadline):
            while target not in view.phases:
                change = await subscriber.get()
                changed = change.view or change.previous
                if changed is not None and changed.cluster != view.cluster:
                    continue  # the same uid in another cluster (uids are unique per cluster only)
                if change.view is None:
                    raise WorkloadNotFound(f"workload {view.kind} {view.namespace}/{view.name} was deleted "
                                           "while waiting")
                view = change.view
        return view
    except TimeoutError:
        raise WaitTimeout(f"{view.kind} {view.namespace}/{view.name} did not reach phase {target.value} "
                          f"within {timeout:g}s", [phase_state(view)]) from None
    finally:
        subscriber.close()
