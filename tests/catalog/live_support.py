"""Create the catalog fixtures in the test control plane and resolve them through the live path.

Used by ``tests/catalog/test_live.py``. For one definition slug, ``run_slug`` puts every fixture
state in a fresh namespace of its own (object names stay exactly as in the fixture), then reads
all of them with one ``InformerCache`` and resolves each state's root through
``WorkloadService`` (the server's read path). Per state it returns a ``LiveResult``.

How a fixture object is created (``prepare``):

* objects are created owners first (topological order over ``ownerReferences``, file order
  otherwise);
* ``metadata.namespace`` becomes the state's namespace; the fields the server sets are dropped
  (uid, resourceVersion, creationTimestamp, generation, managedFields, selfLink,
  deletionTimestamp, deletionGracePeriodSeconds);
* every string equal to the uid of an object created before (ownerReferences, controller-uid
  labels, ...) is replaced by the uid the server gave that object;
* Job (auto-generated selector, i.e. ``manualSelector`` not true): ``spec.selector`` and the
  ``controller-uid`` / ``batch.kubernetes.io/controller-uid`` template labels are dropped: the
  server generates them from the Job's new uid;
* the cluster-scoped objects the pods need and a GPU cluster has (the ``RuntimeClass`` a pod
  names: the RuntimeClass admission plugin rejects a pod whose class does not exist) are
  created first when absent (``ensure_runtime_classes``; handler = name, no overhead);
* ``status`` is written afterwards through the ``/status`` subresource when the resource has one
  (pods included), else sent with the create.

Every write uses ``fieldValidation=Strict``: an unknown or duplicated field is an error, not a
silently pruned field. A write the server rejects is recorded with the server's message
(``LiveResult.rejected``). Objects whose kind the server does not serve (no CRD installed) are not
created (``LiveResult.missing``); their dependants are still created, with ownerReferences to
the fixture uid.
"""

from __future__ import annotations

import asyncio
import copy
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from workload_map.definitions.registry import DefinitionRegistry
from workload_map.gvk import GVK
from workload_map.kube.cache import CacheOptions, InformerCache
from workload_map.resolution import WorkloadView
from workload_map.service.workloads import WorkloadService
from tests.catalog.support import catalog, definition, fixture_states, load

POD = GVK("", "v1", "Pod")
STRICT = {"fieldValidation": "Strict"}
JOB_SELF_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid")
SERVER_META = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink",
               "deletionTimestamp", "deletionGracePeriodSeconds")
SYNC_TIMEOUT = 60.0


@dataclass(frozen=True)
class Resource:
    """What discovery says about one GVK: plural, namespaced, has a ``/status`` subresource."""

    plural: str
    namespaced: bool
    status: bool


@dataclass
class LiveResult:
    """The outcome of one fixture state.

    Attributes:
        namespace: the state's namespace.
        created: ``(kind, name)`` of every object created (status written when it has one).
        rejected: server messages of the writes that failed (``Kind name: create|status HTTP code: msg``).
        missing: ``(apiVersion/kind, name)`` of objects whose kind the server does not serve.
        uids: fixture uid -> live uid of every created object.
        view: the live view of the root (None when not created or not listed).
        listed: ``kind/name`` of every workload the live path lists in the namespace.
        error: anything else that went wrong (sync timeout, root not listed).
    """

    namespace: str
    created: list[tuple[str, str]] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    missing: list[tuple[str, str]] = field(default_factory=list)
    uids: dict[str, str] = field(default_factory=dict)
    view: WorkloadView | None = None
    listed: list[str] = field(default_factory=list)
    error: str = ""


class Discovery:
    """Per-group-version discovery of the control plane (cached)."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self._cache: dict[str, dict[str, Resource]] = {}

    async def resource(self, gvk: GVK) -> Resource | None:
        gv = f"{gvk.group}/{gvk.version}" if gvk.group else gvk.version
        if gv not in self._cache:
            path = f"/apis/{gv}" if gvk.group else f"/api/{gv}"
            r = await self.client.get(path)
            kinds: dict[str, Resource] = {}
            if r.status_code == 200:
                resources = r.json().get("resources", [])
                subs = {x["name"] for x in resources}
                for x in resources:
                    if "/" not in x["name"]:
                        kinds[x["kind"]] = Resource(x["name"], bool(x.get("namespaced")), f"{x['name']}/status" in subs)
            self._cache[gv] = kinds
        return self._cache[gv].get(gvk.kind)


def owner_order(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``docs`` with every object after the objects of the list its ownerReferences name."""
    by_uid = {d["metadata"]["uid"]: d for d in docs}
    out: list[dict[str, Any]] = []
    done: set[int] = set()

    def visit(d: dict[str, Any], path: tuple[int, ...] = ()) -> None:
        if id(d) in done:
            return
        if id(d) in path:
            raise ValueError(f"ownerReferences cycle through {d['kind']} {d['metadata']['name']}")
        for ref in d["metadata"].get("ownerReferences") or []:
            owner = by_uid.get(ref.get("uid"))
            if owner is not None:
                visit(owner, (*path, id(d)))
        done.add(id(d))
        out.append(d)

    for d in docs:
        visit(d)
    return out


def replace_strings(value: Any, mapping: dict[str, str]) -> Any:
    """A copy of ``value`` with every string (keys included) found in ``mapping`` replaced."""
    if isinstance(value, dict):
        return {replace_strings(k, mapping): replace_strings(v, mapping) for k, v in value.items()}
    if isinstance(value, list):
        return [replace_strings(v, mapping) for v in value]
    if isinstance(value, str):
        return mapping.get(value, value)
    return value


def prepare(doc: dict[str, Any], namespace: str | None, uids: dict[str, str]) -> tuple[dict[str, Any], Any]:
    """The create body of a fixture object and its status (``None`` when it has none)."""
    obj = replace_strings(copy.deepcopy(doc), uids)
    meta = obj["metadata"]
    for key in SERVER_META:
        meta.pop(key, None)
    if namespace is None:
        meta.pop("namespace", None)
    else:
        meta["namespace"] = namespace
    if GVK.of(obj) == GVK("batch", "v1", "Job") and not (obj.get("spec") or {}).get("manualSelector"):
        spec = obj.get("spec") or {}
        spec.pop("selector", None)
        labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        for key in JOB_SELF_LABELS:
            labels.pop(key, None)
    status = obj.pop("status", None)
    return obj, status


def message(response: httpx.Response) -> str:
    """The server's message of a failed request (the Status ``message``, else the body)."""
    try:
        body = response.json()
    except ValueError:
        return response.text
    return str(body.get("message", body)) if isinstance(body, dict) else str(body)


def collection(gvk: GVK, res: Resource, namespace: str | None) -> str:
    base = f"/apis/{gvk.group}/{gvk.version}" if gvk.group else f"/api/{gvk.version}"
    ns = f"/namespaces/{namespace}" if res.namespaced and namespace else ""
    return f"{base}{ns}/{res.plural}"


async def create_state(client: httpx.AsyncClient, discovery: Discovery, docs: list[dict[str, Any]],
                       namespace: str) -> LiveResult:
    """Create the objects of one fixture state in ``namespace`` (see the module docstring)."""
    result = LiveResult(namespace)
    for doc in owner_order(docs):
        gvk = GVK.of(doc)
        name = doc["metadata"]["name"]
        res = await discovery.resource(gvk)
        if res is None:
            result.missing.append((f"{doc['apiVersion']}/{doc['kind']}", name))
            continue
        body, status = prepare(doc, namespace if res.namespaced else None, result.uids)
        if status is not None and not res.status:
            body["status"], status = status, None
        url = collection(gvk, res, namespace)
        r = await client.post(url, json=body, params=STRICT)
        if r.status_code != 201:
            result.rejected.append(f"{doc['kind']} {name}: create HTTP {r.status_code}: {message(r)}")
            continue
        created = r.json()
        result.uids[doc["metadata"]["uid"]] = created["metadata"]["uid"]
        if status is not None:
            created["status"] = replace_strings(status, result.uids)
            r = await client.put(f"{url}/{name}/status", json=created, params=STRICT)
            if r.status_code != 200:
                result.rejected.append(f"{doc['kind']} {name}: status HTTP {r.status_code}: {message(r)}")
                continue
        result.created.append((doc["kind"], name))
    return result


async def ensure_runtime_classes(client: httpx.AsyncClient, docs: list[dict[str, Any]]) -> None:
    """Create every RuntimeClass a fixture pod names that the cluster lacks (409 is fine)."""
    names = {d["spec"]["runtimeClassName"] for d in docs
             if GVK.of(d) == POD and (d.get("spec") or {}).get("runtimeClassName")}
    for name in sorted(names):
        r = await client.post("/apis/node.k8s.io/v1/runtimeclasses", json={
            "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
            "metadata": {"name": name, "labels": {"wmap.test/catalog-live": "true"}}, "handler": name})
        assert r.status_code in (201, 409), f"create RuntimeClass {name}: {r.status_code} {r.text}"


async def new_namespace(client: httpx.AsyncClient) -> str:
    name = f"t-{secrets.token_hex(4)}"
    r = await client.post("/api/v1/namespaces", json={
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": name, "labels": {"wmap.test/namespace": "true", "wmap.test/catalog-live": "true"}}})
    assert r.status_code == 201, f"create namespace {name}: {r.status_code} {r.text}"
    return name


def root_of(slug: str, docs: list[dict[str, Any]]) -> dict[str, Any]:
    gvk = definition(slug).gvk
    return next(d for d in docs if GVK.of(d) == gvk)


async def run_slug(control_plane: Any, slug: str) -> dict[str, LiveResult]:
    """Create every state of ``slug`` (one namespace each), resolve them live; state -> result."""
    states = fixture_states(slug)
    results: dict[str, LiveResult] = {}
    async with control_plane.async_client() as client:
        discovery = Discovery(client)
        await ensure_runtime_classes(client, [d for s in states for d in load(slug, s)])
        namespaces = [await new_namespace(client) for _ in states]
        try:
            created = await asyncio.gather(*(create_state(client, discovery, load(slug, s), ns)
                                             for s, ns in zip(states, namespaces)))
            results = dict(zip(states, created))
            await resolve_live(control_plane, slug, results)
        finally:
            for ns in namespaces:
                try:
                    await client.delete(f"/api/v1/namespaces/{ns}", timeout=10)
                except httpx.HTTPError:
                    pass
    return results


async def resolve_live(control_plane: Any, slug: str, results: dict[str, LiveResult]) -> None:
    """Fill ``view`` / ``listed`` of every result through InformerCache + WorkloadService."""
    defn = definition(slug)
    options = CacheOptions(namespaces=tuple(r.namespace for r in results.values()))
    cache = await InformerCache.from_config(str(control_plane.admin_kubeconfig), options=options)
    for gvk in (*defn.kinds(), POD):
        cache.watch(gvk)
    try:
        await cache.start()
        started = time.monotonic()
        synced = await cache.wait_synced(SYNC_TIMEOUT)
        if not synced:
            states = {str(g): s.state for g, s in cache.states().items()}
            for r in results.values():
                r.error = f"informer cache not synced in {SYNC_TIMEOUT:.0f} s ({time.monotonic() - started:.1f} s): {states}"
            return
        service = WorkloadService(DefinitionRegistry(catalog()), cache)
        for state, r in results.items():
            root = root_of(slug, load(slug, state))
            views = service.workloads(namespace=r.namespace)
            r.listed = [f"{v.kind}/{v.name}" for v in views]
            r.view = next((v for v in views if (v.api_version, v.kind, v.name) == (
                root["apiVersion"], root["kind"], root["metadata"]["name"])), None)
            if r.view is None and root["metadata"]["uid"] in r.uids:
                r.error = f"root {root['kind']} {root['metadata']['name']} not listed; listed: {r.listed}"
    finally:
        await cache.stop()
