"""Raw JSON access to the API server: GET, paginated list pages and watch streams.

Everything goes through the shared ``ApiClient`` of ``workload_map.kube.client.KubeClient``
with ``_preload_content=False``: response bodies and watch lines are decoded from the raw
bytes with msgspec's C decoder into plain dicts (``decode_json``), never into model classes
(deserializing pods into models is the expensive part of kubernetes_asyncio,
tomplus/kubernetes_asyncio ``watch/watch.py``; msgspec decodes a 1.8 MB page of 500
generated pods in 21-25 ms where ``json.loads`` takes 49-64 ms). What msgspec refuses but
``json`` accepts (integers beyond 64 bits) is decoded by ``json``, so the result is the
same dict either way. Watch lines are split here rather than with ``readline`` so objects
of any size fit (tomplus/kubernetes_asyncio issue 137).

Errors: every failure raises ``KubeApiError`` (HTTP status and ``Status`` payload, or
status 0 for network failures). A 401 triggers ``refresh_credentials()`` and one retry.

Paths (https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-uris):
``/api/v1[/namespaces/NS]/PLURAL`` for the core group,
``/apis/GROUP/VERSION[/namespaces/NS]/PLURAL`` otherwise.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from workload_map.gvk import GVK
from workload_map.kube.errors import NETWORK, KubeApiError, network_errors
from workload_map.kube.memory import collector_paused

if TYPE_CHECKING:
    import aiohttp

JSON = dict[str, Any]

LIST_TIMEOUT_S, CONNECT_TIMEOUT_S = 120, 10
"""Bounds on one list page or discovery request, and on connecting (seconds)."""


class Credentials(Protocol):
    """What ``KubeApi`` needs from ``KubeClient`` (a Protocol so tests can fake it)."""

    @property
    def api_client(self) -> Any:
        """The shared ``kubernetes_asyncio`` ``ApiClient``."""
        ...

    async def refresh_credentials(self) -> None:
        """Re-read credentials after a 401."""
        ...


def gv_path(group: str, version: str) -> str:
    """``/api/v1`` or ``/apis/GROUP/VERSION``."""
    return f"/apis/{group}/{version}" if group else f"/api/{version}"


def resource_path(gvk: GVK, plural: str, namespace: str | None = None) -> str:
    """The collection path of a resource, optionally within a namespace."""
    scope = f"/namespaces/{namespace}" if namespace else ""
    return f"{gv_path(gvk.group, gvk.version)}{scope}/{plural}"


class KubeApi:
    """GET requests returning decoded JSON, and line-delimited JSON streams.

    Args:
        credentials: a ``KubeClient`` (shared ``ApiClient`` plus 401 refresh).
    """

    def __init__(self, credentials: Credentials) -> None:
        self._credentials = credentials

    async def get_json(self, path: str, query: dict[str, Any] | None = None) -> JSON:
        """GET ``path`` and decode the JSON object body.

        Raises:
            KubeApiError: non-2xx status, network failure or a body that is not a JSON object.
        """
        import aiohttp  # here, not at module level: see ``kube.errors.network_errors``

        response = await self._open(path, query, aiohttp.ClientTimeout(total=LIST_TIMEOUT_S,
                                                                       sock_connect=CONNECT_TIMEOUT_S))
        try:
            body = await response.read()
        except network_errors() as exc:
            raise KubeApiError(NETWORK, "ReadError", str(exc) or type(exc).__name__) from exc
        finally:
            response.release()
        try:
            decoded = decode_json(body)
        except ValueError as exc:
            raise KubeApiError(response.status, "InvalidJSON", str(exc)) from exc
        if not isinstance(decoded, dict):
            raise KubeApiError(response.status, "InvalidJSON", "response is not a JSON object")
        return decoded

    @asynccontextmanager
    async def stream(
        self, path: str, query: dict[str, Any], *, read_timeout: float | None = None
    ) -> AsyncIterator[AsyncIterator[JSON]]:
        """Open a streaming GET; yields an iterator of decoded JSON lines.

        The response is released when the ``async with`` block exits.

        Raises:
            KubeApiError: on open (status) or while reading (network, bad JSON).
        """
        import aiohttp

        timeout = aiohttp.ClientTimeout(total=None, sock_connect=CONNECT_TIMEOUT_S, sock_read=read_timeout)
        response = await self._open(path, query, timeout)
        lines = _json_lines(response)
        try:
            yield lines
        finally:
            await lines.aclose()
            response.close()

    async def _open(self, path: str, query: dict[str, Any] | None, timeout: aiohttp.ClientTimeout) -> Any:
        """Send the request; retry once after refreshing credentials on 401."""
        for attempt in (1, 2):
            response = await self._send(path, query, timeout)
            if response.status == 401 and attempt == 1:
                response.release()
                await self._credentials.refresh_credentials()
                continue
            if response.status >= 400:
                await _raise_for(response)
            return response
        raise AssertionError("unreachable")

    async def _send(self, path: str, query: dict[str, Any] | None, timeout: aiohttp.ClientTimeout) -> Any:
        params = [(k, _query_value(v)) for k, v in (query or {}).items() if v is not None]
        try:
            return await self._credentials.api_client.call_api(
                path, "GET", query_params=params, header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"], _preload_content=False, _request_timeout=timeout,
            )
        except network_errors() as exc:
            raise KubeApiError(NETWORK, type(exc).__name__, str(exc) or type(exc).__name__) from exc


def _query_value(value: Any) -> str:
    """Query-string form: booleans as ``true``/``false``."""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


async def _raise_for(response: Any) -> None:
    try:
        body = await response.read()
    except network_errors():
        body = b""
    finally:
        response.release()
    raise KubeApiError.from_body(response.status, body, retry_after=response.headers.get("Retry-After"))


async def _json_lines(response: Any) -> AsyncGenerator[JSON, None]:
    """Decode newline-delimited JSON objects from a streaming response."""
    buffer = b""
    while True:
        try:
            chunk = await response.content.readany()
        except network_errors() as exc:
            raise KubeApiError(NETWORK, type(exc).__name__, str(exc) or type(exc).__name__) from exc
        if not chunk:
            return
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            if line.strip():
                yield _decode_line(line)


_DECODER = msgspec.json.Decoder()


def decode_json(body: bytes) -> Any:
    """The JSON value of ``body`` (msgspec; ``json`` for what msgspec refuses).

    The cyclic garbage collector is paused while msgspec builds the value: a decoded body
    is dicts, lists and scalars only (no cycle to find), and the collections its
    allocations would trigger (hundreds for a list page of 500 pods) made up a third of the
    decoding time.

    Raises:
        ValueError: ``body`` is not JSON (the standard library's message: line, column).
    """
    try:
        with collector_paused():
            return _DECODER.decode(body)
    except msgspec.DecodeError:
        return json.loads(body)  # beyond 64-bit integers decode; malformed text gets json's diagnosis


def _decode_line(line: bytes) -> JSON:
    try:
        decoded = decode_json(line)
    except ValueError as exc:
        raise KubeApiError(NETWORK, "InvalidJSON", f"watch line: {exc}") from exc
    if not isinstance(decoded, dict):
        raise KubeApiError(NETWORK, "InvalidJSON", "watch line is not a JSON object")
    return decoded


class ResourceClient:
    """List pages and watch streams of one resource (GVK + plural + optional namespace).

    Implements ``workload_map.kube.reflector.ListWatch``.
    """

    def __init__(self, api: KubeApi, gvk: GVK, plural: str, namespace: str | None = None) -> None:
        self.gvk, self.plural, self.namespace = gvk, plural, namespace
        self._api = api
        self._path = resource_path(gvk, plural, namespace)

    async def list_page(self, *, limit: int, continue_token: str | None) -> JSON:
        """One page of the collection (``metadata.continue`` set when more follow)."""
        return await self._api.get_json(self._path, {"limit": limit, "continue": continue_token})

    def watch(self, *, resource_version: str, timeout_seconds: int, read_timeout: float) -> Any:
        """Async context manager yielding watch events (dicts) from ``resource_version``."""
        query = {
            "watch": True, "resourceVersion": resource_version, "allowWatchBookmarks": True,
            "timeoutSeconds": timeout_seconds,
        }
        return self._api.stream(self._path, query, read_timeout=read_timeout)
