"""Read and JSON-Patch one workload object on the API server (the write side of issue 15).

``ClusterWriter`` GETs the full object (the cache keeps trimmed copies) and sends RFC 6902
patches (``Content-Type: application/json-patch+json``,
https://kubernetes.io/docs/tasks/manage-kubernetes-objects/update-api-object-kubectl-patch/).
Its client is the Karta store's: an ``ImpersonatingClient`` with ``--auth kubernetes``
and impersonation on, so inside ``workload_map.auth.writes.patching_as`` both requests carry the
caller's identity and the caller's RBAC decides. The resource plural comes from the
informer cache's discovery.

Errors: 403 -> :class:`WriteRefused`, 404 -> ``WorkloadNotFound``, 409 -> ``Conflict``
(stale resourceVersion), 400/422 -> ``InvalidRequest`` with the API server's message,
anything else -> ``StoreError`` (503; details logged).
"""

from __future__ import annotations

import json
from typing import Any


from workload_map.definitions.stored import StoreError
from workload_map.errors import Conflict, InvalidRequest, WorkloadNotFound
from workload_map.gvk import GVK
from workload_map.kube.api import KubeApi, resource_path
from workload_map.kube.discovery import Discovery
from workload_map.kube.errors import NETWORK, KubeApiError, WriteRefused, network_errors
from workload_map.logs import logger

log = logger(__name__)

PATCH_TIMEOUT_S = 30.0


class ClusterWriter:
    """GET and JSON-Patch workload objects.

    Args:
        client: a ``KubeClient`` or ``ImpersonatingClient`` (anything with ``api_client``
            and ``refresh_credentials``).
        discovery: GVK -> plural (the informer cache's ``Discovery``).
    """

    applied_to = "cluster"

    def __init__(self, client: Any, discovery: Discovery) -> None:
        self._client, self._discovery = client, discovery

    async def resource(self, gvk: GVK) -> str:
        """The plural resource name of ``gvk``.

        Raises:
            InvalidRequest: the API server does not serve ``gvk``.
        """
        try:
            info = await self._discovery.resolve(gvk)
        except KubeApiError as exc:
            raise StoreError(f"cannot discover {gvk}: {exc}") from None
        if info is None:
            raise InvalidRequest(f"{gvk} is not served by the API server")
        return info.plural

    async def read(self, gvk: GVK, namespace: str | None, name: str) -> dict[str, Any]:
        """The object as stored now (full, with its resourceVersion)."""
        path = f"{resource_path(gvk, await self.resource(gvk), namespace)}/{name}"
        try:
            return await KubeApi(self._client).get_json(path)
        except KubeApiError as exc:
            raise _error(exc.status, exc.message or exc.reason, f"get {gvk.kind} {name}") from None

    async def patch(self, gvk: GVK, namespace: str | None, name: str, ops: list[dict[str, Any]],
                    updated: dict[str, Any]) -> dict[str, Any]:
        """Send ``ops`` as one JSON Patch; returns the stored object after it (``updated`` unused)."""
        path = f"{resource_path(gvk, await self.resource(gvk), namespace)}/{name}"
        for attempt in (1, 2):
            status, body = await self._send(path, ops)
            if status == 401 and attempt == 1:
                await self._client.refresh_credentials()
                continue
            if 200 <= status < 300:
                answer: dict[str, Any] = json.loads(body)
                return answer
            raise _error(status, _message(body), f"patch {gvk.kind} {name}")
        raise _error(401, "unauthorized", f"patch {gvk.kind} {name}")

    async def _send(self, path: str, ops: list[dict[str, Any]]) -> tuple[int, bytes]:
        try:
            response = await self._client.api_client.call_api(
                path, "PATCH", body=ops, header_params={"Content-Type": "application/json-patch+json",
                                                        "Accept": "application/json"},
                auth_settings=["BearerToken"], _preload_content=False, _request_timeout=PATCH_TIMEOUT_S)
        except network_errors() as exc:
            return NETWORK, str(exc).encode()
        except Exception as exc:  # ApiException (the REST client raises on >= 400)
            status = getattr(exc, "status", None)
            if not isinstance(status, int):
                raise
            body = getattr(exc, "body", b"") or b""
            return status, body if isinstance(body, bytes) else str(body).encode()
        try:
            return int(response.status), await response.read()
        finally:
            response.release()


def _message(body: bytes) -> str:
    try:
        decoded = json.loads(body or b"{}")
    except ValueError:
        return body[:200].decode("utf-8", "replace")
    return str(decoded.get("message", "")) if isinstance(decoded, dict) else ""


def _error(status: int, message: str, action: str) -> Exception:
    if status == 403:
        return WriteRefused(f"cannot {action}: refused by the API server")
    if status == 404:
        return WorkloadNotFound(f"cannot {action}: not found")
    if status == 409:
        return Conflict(f"cannot {action}: the object was changed (resourceVersion is stale); read it and retry")
    if status in (400, 422):
        return InvalidRequest(f"cannot {action}: the API server rejected the change: {message}")
    log.warning("cannot %s: %s %s", action, status, message)
    return StoreError(f"cannot {action}: the API server answered {status or 'nothing'}")
