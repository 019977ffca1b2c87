"""In-memory stand-ins for the API server, used by the reflector and cache unit tests.

``FakeApiServer`` keeps objects of one resource with a resourceVersion counter and an
event log, and serves ``ListWatch`` clients: paginated lists with continue tokens, watches
that replay the log after a resourceVersion and then follow new writes, 410 after a
compaction, injected errors, disconnects and silent ("hung") streams. Every wait is on an
``asyncio.Event``; nothing sleeps on wall time.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from workload_map.gvk import GVK
from workload_map.kube.discovery import CRD_GVK
from workload_map.kube.errors import KubeApiError

_uids = itertools.count(1)


def make_obj(gvk: GVK, name: str, namespace: str | None = "ns", *, uid: str | None = None,
             labels: dict[str, str] | None = None, owner: dict[str, Any] | None = None,
             **fields: Any) -> dict[str, Any]:
    """A minimal object of ``gvk`` (``owner``: a parent object; makes a controller ref)."""
    meta: dict[str, Any] = {"name": name, "uid": uid or f"uid-{name}-{next(_uids)}"}
    if namespace:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = labels
    if owner is not None:
        meta["ownerReferences"] = [{
            "apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
    return {"apiVersion": gvk.api_version, "kind": gvk.kind, "metadata": meta, **fields}


class FakeApiServer:
    """One resource collection with list/watch semantics close to kube-apiserver's."""

    def __init__(self, gvk: GVK) -> None:
        self.gvk = gvk
        self.rv = 100
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self.log: list[tuple[int, str, dict[str, Any]]] = []
        self.compacted = 0
        self.list_errors: deque[Exception] = deque()
        self.watch_errors: deque[Exception] = deque()
        self.list_calls = 0
        self.watch_calls: list[dict[str, Any]] = []
        self.open_watches = 0
        self.hang = False
        self._epoch = 0
        self._changed = asyncio.Event()
        self._snapshots: dict[str, tuple[list[dict[str, Any]], int]] = {}
        self._tokens = itertools.count(1)

    # writes

    def _commit(self, event_type: str, obj: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = str(self.rv)
        self.log.append((self.rv, event_type, obj))
        self._notify()
        return obj

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    @staticmethod
    def _key(obj: dict[str, Any]) -> tuple[str, str]:
        return (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Add ``obj`` (ADDED event)."""
        stored = self._commit("ADDED", obj)
        self.objects[self._key(stored)] = stored
        return stored

    def update(self, namespace: str, name: str, **fields: Any) -> dict[str, Any]:
        """Replace top-level ``fields`` of an object (MODIFIED event)."""
        obj = {**copy.deepcopy(self.objects[(namespace, name)]), **fields}
        stored = self._commit("MODIFIED", obj)
        self.objects[(namespace, name)] = stored
        return stored

    def delete(self, namespace: str, name: str) -> None:
        """Remove an object (DELETED event carrying a new resourceVersion)."""
        obj = self.objects.pop((namespace, name))
        self._commit("DELETED", obj)

    def bookmark(self) -> None:
        """Send a BOOKMARK at the current resourceVersion to open watches."""
        self.log.append((self.rv, "BOOKMARK", {"kind": self.gvk.kind, "apiVersion": self.gvk.api_version,
                                               "metadata": {"resourceVersion": str(self.rv)}}))
        self._notify()

    def compact(self) -> None:
        """Forget history: watches from older resourceVersions get 410."""
        self.compacted = self.rv

    def disconnect(self) -> None:
        """End every open watch stream (as a server restart or timeout does)."""
        self._epoch += 1
        self._notify()

    def client(self, namespace: str | None = None) -> FakeClient:
        """A ``ListWatch`` over this server, optionally for one namespace."""
        return FakeClient(self, namespace)

    def state(self, namespace: str | None = None) -> dict[tuple[str, str], str]:
        """``(namespace, name) -> resourceVersion`` of the objects now stored."""
        return {k: o["metadata"]["resourceVersion"] for k, o in self.objects.items()
                if namespace is None or k[0] == namespace}

    # reads

    def list_page(self, namespace: str | None, limit: int, token: str | None) -> dict[str, Any]:
        self.list_calls += 1
        if self.list_errors:
            raise self.list_errors.popleft()
        if token is None:
            items = [copy.deepcopy(o) for k, o in sorted(self.objects.items())
                     if namespace is None or k[0] == namespace]
            snapshot, offset, rv = items, 0, self.rv
        else:
            if token not in self._snapshots:
                raise KubeApiError(410, "Expired", "continue token expired")
            (snapshot, rv), offset = self._snapshots.pop(token), int(token.split(":")[1])
        page = snapshot[offset:offset + limit]
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if offset + limit < len(snapshot):
            next_token = f"{next(self._tokens)}:{offset + limit}"
            self._snapshots[next_token] = (snapshot, rv)
            meta["continue"] = next_token
        for item in page:  # list items of typed lists carry no apiVersion/kind
            item.pop("apiVersion", None)
            item.pop("kind", None)
        return {"kind": f"{self.gvk.kind}List", "apiVersion": self.gvk.api_version, "metadata": meta, "items": page}

    @asynccontextmanager
    async def watch(self, namespace: str | None, resource_version: str, timeout_seconds: int
                    ) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        self.watch_calls.append({"resourceVersion": resource_version, "timeoutSeconds": timeout_seconds})
        if self.watch_errors:
            raise self.watch_errors.popleft()
        self.open_watches += 1
        try:
            yield self._events(namespace, int(resource_version or 0), self._epoch)
        finally:
            self.open_watches -= 1

    async def _events(self, namespace: str | None, since: int, epoch: int) -> AsyncIterator[dict[str, Any]]:
        if since < self.compacted:
            yield {"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                               "code": 410, "reason": "Expired", "message": "too old resource version"}}
            return
        position = next((i for i, (rv, _, _) in enumerate(self.log) if rv > since), len(self.log))
        while True:
            if self._epoch != epoch:
                return
            if position < len(self.log) and not self.hang:
                rv, event_type, obj = self.log[position]
                position += 1
                ns = obj["metadata"].get("namespace", "")
                if event_type != "BOOKMARK" and namespace is not None and ns != namespace:
                    continue
                if event_type == "BOOKMARK" and rv <= since:
                    continue
                yield {"type": event_type, "object": copy.deepcopy(obj)}
                continue
            await self._changed.wait()


class FakeClient:
    """``ListWatch`` of one namespace (or all) of a ``FakeApiServer``."""

    def __init__(self, server: FakeApiServer, namespace: str | None) -> None:
        self.server, self.namespace = server, namespace

    async def list_page(self, *, limit: int, continue_token: str | None) -> dict[str, Any]:
        await asyncio.sleep(0)
        return self.server.list_page(self.namespace, limit, continue_token)

    def watch(self, *, resource_version: str, timeout_seconds: int, read_timeout: float) -> Any:
        return self.server.watch(self.namespace, resource_version, timeout_seconds)


class ScriptedListWatch:
    """``ListWatch`` replaying fixed scripts: list results and watch event sequences.

    ``lists``: each item is a page dict or an exception, consumed per ``list_page`` call.
    ``watches``: each item is a list of events / exceptions for one watch stream; the
    stream then ends (or hangs when ``hang_after`` is set). With no script left, a watch
    hangs until cancelled.
    """

    def __init__(self, lists: list[Any], watches: list[list[Any]], *, hang_after: bool = False) -> None:
        self.lists = deque(lists)
        self.watches = deque(watches)
        self.hang_after = hang_after
        self.list_calls = 0
        self.watch_calls: list[dict[str, Any]] = []

    async def list_page(self, *, limit: int, continue_token: str | None) -> dict[str, Any]:
        self.list_calls += 1
        await asyncio.sleep(0)
        item = self.lists.popleft() if self.lists else {"metadata": {"resourceVersion": "1"}, "items": []}
        if isinstance(item, Exception):
            raise item
        return item

    @asynccontextmanager
    async def _stream(self, script: list[Any] | None) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        async def events() -> AsyncIterator[dict[str, Any]]:
            for item in script or []:
                await asyncio.sleep(0)
                if isinstance(item, Exception):
                    raise item
                yield item
            if script is None or self.hang_after:
                await asyncio.Event().wait()
        yield events()

    def watch(self, *, resource_version: str, timeout_seconds: int, read_timeout: float) -> Any:
        self.watch_calls.append({"resourceVersion": resource_version, "timeoutSeconds": timeout_seconds,
                                 "read_timeout": read_timeout})
        return self._stream(self.watches.popleft() if self.watches else None)


async def wait_for(predicate: Any, timeout: float = 5.0, interval: float = 0.01) -> bool:
    """Poll ``predicate()`` until true or ``timeout`` seconds pass; returns its last value."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            return bool(predicate())
        await asyncio.sleep(interval)
    return True


# ---- discovery ------------------------------------------------------------------------------

CORE_V1 = {"kind": "APIResourceList", "groupVersion": "v1", "resources": [
    {"name": "pods", "namespaced": True, "kind": "Pod", "verbs": ["get", "list", "watch", "create"]},
    {"name": "pods/status", "namespaced": True, "kind": "Pod", "verbs": ["get", "patch"]},
    {"name": "nodes", "namespaced": False, "kind": "Node", "verbs": ["list", "watch"]},
    {"name": "bindings", "namespaced": True, "kind": "Binding", "verbs": ["create"]},
]}
JOBSET_V1A2 = {"kind": "APIResourceList", "groupVersion": "jobset.x-k8s.io/v1alpha2", "resources": [
    {"name": "jobsets", "namespaced": True, "kind": "JobSet", "verbs": ["list", "watch", "get"]}]}


class FakeJson:
    def __init__(self, documents: dict[str, dict]) -> None:
        self.documents = documents
        self.calls: list[str] = []
        self.error: KubeApiError | None = None

    async def get_json(self, path: str, query: dict | None = None) -> dict:
        self.calls.append(path)
        if self.error is not None:
            raise self.error
        if path not in self.documents:
            raise KubeApiError(404, "NotFound", "the server could not find the requested resource")
        return self.documents[path]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def crd(group: str = "jobset.x-k8s.io", kind: str = "JobSet", plural: str = "jobsets", version: str = "v1alpha2",
        *, established: bool = True, served: bool = True, scope: str = "Namespaced") -> dict:
    return {"apiVersion": CRD_GVK.api_version, "kind": CRD_GVK.kind,
            "metadata": {"name": f"{plural}.{group}", "uid": f"crd-{plural}", "resourceVersion": "1"},
            "spec": {"group": group, "scope": scope, "names": {"kind": kind, "plural": plural},
                     "versions": [{"name": version, "served": served, "storage": True}]},
            "status": {"conditions": [{"type": "Established", "status": "True" if established else "False"}]}}
