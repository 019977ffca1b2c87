"""``KubeApiError``: one failed API call, carrying the Kubernetes ``Status`` payload; ``WriteRefused``.

Raised by ``workload_map.kube.api`` for non-2xx responses, ``ERROR`` watch events and network
failures, and classified by the reflector (404 missing, 403 forbidden, 410 expired ->
relist, everything else transient). The ``Status`` shape is described in the API
conventions: https://github.com/kubernetes/community/blob/master/contributors/devel/sig-architecture/api-conventions.md#response-status-kind
Model: nolar/kopf ``kopf/_cogs/clients/errors.py``. Internal to ``workload_map.kube``: the
service layer sees ``InformerStatus`` states, never this exception.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from workload_map.errors import Forbidden

NETWORK = 0
"""``status`` used for failures without an HTTP response (connect, TLS, reset, timeout)."""


def network_errors() -> tuple[type[BaseException], ...]:
    """What a failed connection or request raises: ``TimeoutError``, aiohttp's ``ClientError``, ``OSError``.

    aiohttp is imported on the first call, when a request has failed (so the HTTP client is
    loaded already): imported with these modules it cost about 0.1 s of every server start,
    in snapshot mode too, where no request is ever made.
    """
    import aiohttp

    return (TimeoutError, aiohttp.ClientError, OSError)


class KubeApiError(Exception):
    """A Kubernetes API call failed.

    Attributes:
        status: HTTP status code (``0`` for network failures).
        reason: the ``Status.reason`` (``NotFound``, ``Forbidden``, ``Expired``, ...).
        message: the ``Status.message`` or the network error text.
        retry_after: seconds from a ``Retry-After`` header / ``details.retryAfterSeconds``.
    """

    def __init__(self, status: int, reason: str = "", message: str = "", *, retry_after: float | None = None) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        self.retry_after = retry_after
        super().__init__(f"{status} {reason}: {message}" if status else f"network error: {message}")

    @classmethod
    def from_status(cls, status_obj: Mapping[str, Any], *, http_status: int = 0) -> KubeApiError:
        """Build from a decoded ``Status`` object (watch ``ERROR`` event or error body)."""
        code = status_obj.get("code")
        details = status_obj.get("details")
        retry = details.get("retryAfterSeconds") if isinstance(details, Mapping) else None
        return cls(
            code if isinstance(code, int) and code else http_status,
            str(status_obj.get("reason", "")),
            str(status_obj.get("message", "")),
            retry_after=float(retry) if isinstance(retry, (int, float)) else None,
        )

    @classmethod
    def from_body(cls, http_status: int, body: bytes, *, retry_after: str | None = None) -> KubeApiError:
        """Build from an HTTP error response (JSON ``Status`` body, or plain text)."""
        try:
            decoded = json.loads(body)
        except ValueError:
            decoded = None
        if isinstance(decoded, dict):
            error = cls.from_status(decoded, http_status=http_status)
        else:
            error = cls(http_status, "", body[:500].decode("utf-8", "replace"))
        if retry_after and retry_after.isdigit():
            error.retry_after = float(retry_after)
        return error

    @property
    def is_gone(self) -> bool:
        """410: the requested resourceVersion (or continue token) expired -> relist."""
        return self.status == 410

    @property
    def needs_relist(self) -> bool:
        """410 Gone, or "Too large resource version" (504): the stored RV is unusable."""
        return self.is_gone or (self.status == 504 and "too large resource version" in self.message.lower())

    @property
    def is_not_found(self) -> bool:
        """404: the resource (typically a CRD) is not served."""
        return self.status == 404

    @property
    def answered(self) -> bool:
        """The API server gave an answer: not a network error, a 5xx or a 429 (it may say otherwise later)."""
        return self.status != NETWORK and self.status < 500 and self.status != 429

    @property
    def is_forbidden(self) -> bool:
        """403: the credentials may not do this."""
        return self.status == 403


class WriteRefused(Forbidden):
    """The API server answered 403 to a read or write of a workload object (``workload_map.kube.patches``).

    Here, beside the API error, so that the HTTP layer can name it without importing the
    HTTP client (aiohttp, about 0.1 s of a server's start in snapshot mode).
    """
