"""One JSON request to the API server that may write: POST, PUT, PATCH with a JSON body.

``KubeApi`` only reads; the Lease of leader election and the Karta status writer also
create, replace and patch. Requests go through the shared ``ApiClient`` with
``_preload_content=False`` (plain dicts, no model classes), as in ``workload_map.kube.api``.

Errors: none are raised for HTTP answers; :func:`send_json` returns the status and the
decoded body (``{}`` when it is not a JSON object). A network failure or timeout is status
``0`` (``workload_map.kube.errors.NETWORK``) with ``{"message": ...}``. A 401 refreshes the
credentials and retries once.
"""

from __future__ import annotations

import json
from typing import Any


from workload_map.kube.errors import NETWORK, network_errors

WRITE_TIMEOUT_S = 15.0
"""Bound on one write request, seconds."""

MERGE_PATCH = "application/merge-patch+json"
"""RFC 7386 JSON merge patch (https://kubernetes.io/docs/reference/using-api/api-concepts/#patch-and-apply)."""


async def send_json(client: Any, method: str, path: str, body: Any, *,
                    content_type: str = "application/json",
                    timeout: float = WRITE_TIMEOUT_S) -> tuple[int, dict[str, Any]]:
    """Send ``body`` as JSON with ``method`` to ``path``.

    Args:
        client: a ``KubeClient`` (``api_client`` and ``refresh_credentials``).
        method: ``POST``, ``PUT`` or ``PATCH``.
        path: the API path, e.g. ``/apis/coordination.k8s.io/v1/namespaces/NS/leases``.
        body: the JSON document.
        content_type: the request content type (:data:`MERGE_PATCH` for a merge patch).
        timeout: seconds for the whole request.

    Returns:
        ``(HTTP status, decoded body)``; status 0 for a network failure.
    """
    for attempt in (1, 2):
        status, raw = await _send(client, method, path, body, content_type, timeout)
        if status == 401 and attempt == 1:
            await client.refresh_credentials()
            continue
        return status, _decode(raw)
    raise AssertionError("unreachable")


async def _send(client: Any, method: str, path: str, body: Any, content_type: str,
                timeout: float) -> tuple[int, bytes]:
    try:
        response = await client.api_client.call_api(
            path, method, body=body, header_params={"Content-Type": content_type, "Accept": "application/json"},
            auth_settings=["BearerToken"], _preload_content=False, _request_timeout=timeout)
    except network_errors() as exc:
        return NETWORK, json.dumps({"message": str(exc) or type(exc).__name__}).encode()
    except Exception as exc:  # ApiException: the REST client raises on >= 400
        status = getattr(exc, "status", None)
        if not isinstance(status, int):
            raise
        raw = getattr(exc, "body", b"") or b""
        return status, raw if isinstance(raw, bytes) else str(raw).encode()
    try:
        return int(response.status), await response.read()
    finally:
        response.release()


def _decode(raw: bytes) -> dict[str, Any]:
    try:
        decoded = json.loads(raw or b"{}")
    except ValueError:
        return {"message": raw[:200].decode("utf-8", "replace")}
    return decoded if isinstance(decoded, dict) else {}
