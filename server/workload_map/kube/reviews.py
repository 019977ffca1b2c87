"""Caller checks against the API server: TokenReview, SubjectAccessReview, impersonated writes.

* :class:`KubeReviews` sends ``authentication.k8s.io/v1`` TokenReviews and
  ``authorization.k8s.io/v1`` SubjectAccessReviews with the server's own credentials (the
  shared ``KubeClient``) and returns plain values. The server therefore needs ``create`` on
  ``tokenreviews`` and ``subjectaccessreviews``
  (https://kubernetes.io/docs/reference/access-authn-authz/authentication/#webhook-token-authentication,
  https://kubernetes.io/docs/reference/access-authn-authz/authorization/#checking-api-access).
* :class:`ImpersonatingClient` is a ``KubeClient`` whose requests carry ``Impersonate-User``
  and one ``Impersonate-Group`` header per group while an :func:`acting_as` block is active
  in the current task, so writes (Karta objects) are made *as the caller* and the cluster's
  audit log names the real user
  (https://kubernetes.io/docs/reference/access-authn-authz/authentication/#user-impersonation).
  The server then needs ``impersonate`` on ``users`` and ``groups`` (and ``serviceaccounts``
  for callers that are service accounts). ``ApiClient.call_api`` folds header lists into a
  dict, so the headers are added below it, on the REST client.

This module imports ``kubernetes_asyncio`` and ``aiohttp`` only when a request is made, so
``workload_map.auth`` can use its value types without loading the client (offline start-up).

Errors: :class:`ReviewUnavailable` (503) when a review cannot be made (network, timeout,
the server's credentials refused, unreadable answer); upstream messages are logged, not
returned. A 401 on a review refreshes the server's credentials and retries once.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from msgspec import Struct
from multidict import CIMultiDict

from workload_map.errors import ServerError
from workload_map.logs import logger

if TYPE_CHECKING:
    from workload_map.kube.client import KubeClient

log = logger(__name__)

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
REVIEW_TIMEOUT_S = 10.0
IMPERSONATION_KINDS = frozenset({"users", "groups", "serviceaccounts", "uids", "userextras"})
"""``details.kind`` of a 403 that refused the *server's* impersonation, not the caller's write."""


class ReviewUnavailable(ServerError):
    """A TokenReview or SubjectAccessReview could not be made (503; details in the server log)."""

    code = "auth_unavailable"


class ReviewedUser(Struct, frozen=True):
    """The identity a TokenReview returned (``status.user``).

    Attributes:
        username: e.g. ``alice`` or ``system:serviceaccount:ns:name``.
        uid: may be empty.
        groups: group names, ``system:authenticated`` included when the authenticator adds it.
        extra: ``status.user.extra`` (scopes, service-account pod name, ...), values as tuples.
    """

    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


class AccessAttributes(Struct, frozen=True):
    """What is asked in a SubjectAccessReview: a resource request or a non-resource URL.

    Attributes:
        verb: ``list``, ``get``, ``create``, ``delete``, ...
        group: API group (``""`` for core).
        resource: plural resource name (``jobsets``); empty for a non-resource ``path``.
        namespace: ``""`` asks for all namespaces (or a cluster-scoped resource).
        name: one object, ``""`` for any.
        path: a non-resource URL such as ``/metrics`` (then ``resource`` is empty).
    """

    verb: str
    group: str = ""
    resource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""

    def to_spec(self) -> dict[str, Any]:
        """The ``resourceAttributes`` / ``nonResourceAttributes`` part of the review spec."""
        if self.path:
            return {"nonResourceAttributes": {"path": self.path, "verb": self.verb}}
        attributes = {"verb": self.verb, "group": self.group, "resource": self.resource}
        if self.namespace:
            attributes["namespace"] = self.namespace
        if self.name:
            attributes["name"] = self.name
        return {"resourceAttributes": attributes}


class KubeReviews:
    """TokenReview and SubjectAccessReview through the server's client (no caching here).

    Args:
        client: the server's ``KubeClient`` (its own identity makes the reviews).
        audiences: audiences a token must be valid for (``spec.audiences``; empty: the API
            server's default audience).
        timeout: seconds for one review request.
    """

    def __init__(self, client: KubeClient, *, audiences: tuple[str, ...] = (),
                 timeout: float = REVIEW_TIMEOUT_S) -> None:
        self._client = client
        self._audiences = audiences
        self._timeout = timeout

    async def review_token(self, token: str) -> ReviewedUser | None:
        """The user ``token`` authenticates as, or None when the API server rejects it.

        Raises:
            ReviewUnavailable: the review could not be made.
        """
        spec: dict[str, Any] = {"token": token}
        if self._audiences:
            spec["audiences"] = list(self._audiences)
        status = await self._review(TOKEN_REVIEWS, "TokenReview", "authentication.k8s.io/v1", spec)
        if status.get("authenticated") is not True or not isinstance(status.get("user"), dict):
            return None
        if self._audiences and not set(status.get("audiences") or ()) & set(self._audiences):
            return None
        return _user(status["user"])

    async def review_access(self, user: ReviewedUser, attributes: AccessAttributes) -> bool:
        """True when the API server's authorizers allow ``user`` to do ``attributes``.

        Raises:
            ReviewUnavailable: the review could not be made.
        """
        spec = {"user": user.username, "groups": list(user.groups), **attributes.to_spec()}
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra}
        status = await self._review(ACCESS_REVIEWS, "SubjectAccessReview", "authorization.k8s.io/v1", spec)
        return status.get("allowed") is True and status.get("denied") is not True

    async def _review(self, path: str, kind: str, api_version: str, spec: dict[str, Any]) -> dict[str, Any]:
        body = {"apiVersion": api_version, "kind": kind, "spec": spec}
        for attempt in (1, 2):
            status, data = await self._post(path, body, kind)
            if status == 401 and attempt == 1:
                await self._client.refresh_credentials()
                continue
            if not 200 <= status < 300:
                log.error("%s failed: HTTP %s %s", kind, status, data[:300].decode("utf-8", "replace"))
                raise ReviewUnavailable(f"cannot check the caller: the API server refused the {kind} ({status})")
            try:
                answer = json.loads(data)
            except ValueError:
                answer = None
            if not isinstance(answer, dict):
                raise ReviewUnavailable(f"cannot check the caller: unreadable {kind} answer")
            result = answer.get("status")
            return result if isinstance(result, dict) else {}
        raise ReviewUnavailable(f"cannot check the caller: the server's credentials were refused ({kind})")

    async def _post(self, path: str, body: dict[str, Any], kind: str) -> tuple[int, bytes]:
        import aiohttp

        try:
            response = await self._client.api_client.call_api(
                path, "POST", body=body, header_params={"Accept": "application/json",
                                                        "Content-Type": "application/json"},
                auth_settings=["BearerToken"], _preload_content=False, _request_timeout=self._timeout)
            try:
                return int(response.status), await response.read()
            finally:
                response.release()
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            log.error("%s failed: %s", kind, exc or type(exc).__name__)
            raise ReviewUnavailable(f"cannot check the caller: the API server did not answer the {kind}") from None


def _user(raw: Mapping[str, Any]) -> ReviewedUser:
    extra: Mapping[str, Any] = raw["extra"] if isinstance(raw.get("extra"), dict) else {}
    return ReviewedUser(
        username=str(raw.get("username") or ""), uid=str(raw.get("uid") or ""),
        groups=tuple(str(g) for g in raw.get("groups") or () if isinstance(g, str)),
        extra=tuple(sorted((str(k), tuple(str(x) for x in v)) for k, v in extra.items() if isinstance(v, list))))


# ---- impersonation ---------------------------------------------------------------------------


class Acting(Struct):
    """The identity requests are made as inside :func:`acting_as`, and what the API server said.

    Attributes:
        user: ``Impersonate-User``.
        groups: one ``Impersonate-Group`` header each.
        refused: set when an impersonated request got 403: ``caller`` (the caller may not do
            it) or ``impersonation`` (the server may not impersonate).
        requests: impersonated requests sent so far.
    """

    user: str
    groups: tuple[str, ...] = ()
    refused: str = ""
    requests: int = 0


_ACTING: ContextVar[Acting | None] = ContextVar("wmap_acting_as", default=None)


@contextlib.contextmanager
def acting_as(user: str, groups: tuple[str, ...]) -> Iterator[Acting]:
    """Make every ``ImpersonatingClient`` request in this task impersonate ``user``/``groups``.

    Yields the :class:`Acting` record (inspect ``refused`` after a failed write).
    """
    acting = Acting(user, tuple(groups))
    token = _ACTING.set(acting)
    try:
        yield acting
    finally:
        _ACTING.reset(token)


VERBS = frozenset({"GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE"})


class _ImpersonatingRest:
    """Wraps an ``ApiClient``'s REST client to impersonate the caller.

    While acting as someone, each verb call gets the impersonation headers (as a
    multi-dict, one ``Impersonate-Group`` per group) and a 403 is recorded on the
    :class:`Acting` record.
    """

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._inner, name)
        if name not in VERBS:
            return attribute

        async def call(url: str, *, headers: Any = None, **kwargs: Any) -> Any:
            return await self._send(attribute, url, headers, kwargs)

        return call

    async def _send(self, verb: Callable[..., Awaitable[Any]], url: str, headers: Any,
                    kwargs: dict[str, Any]) -> Any:
        acting = _ACTING.get()
        if acting is None:
            return await verb(url, headers=headers, **kwargs)
        multi: CIMultiDict[str] = CIMultiDict(headers or {})
        multi["Impersonate-User"] = acting.user
        for group in acting.groups:
            multi.add("Impersonate-Group", group)
        acting.requests += 1
        try:
            return await verb(url, headers=multi, **kwargs)
        except Exception as exc:  # ApiException (imported lazily): only its status is read
            if getattr(exc, "status", None) == 403:
                kind = _refused_kind(getattr(exc, "body", None))
                acting.refused = "impersonation" if kind in IMPERSONATION_KINDS else "caller"
            raise


def _refused_kind(body: Any) -> str:
    try:
        status = json.loads(body or "{}")
    except (TypeError, ValueError):
        return ""
    details = status.get("details") if isinstance(status, dict) else None
    return str(details.get("kind", "")) if isinstance(details, dict) else ""


class ImpersonatingClient:
    """What ``KartaStore`` needs of a ``KubeClient`` (``api_client``), impersonating.

    It shares ``base``'s configuration; its requests impersonate the identity of the
    enclosing :func:`acting_as` block (outside one they carry the server's own identity).

    Its HTTP session is separate from ``base``'s: close both.
    """

    def __init__(self, base: KubeClient) -> None:
        self._base = base
        self._api_client: Any = None

    @property
    def api_client(self) -> Any:
        """The lazily created ``ApiClient`` whose REST client adds the impersonation headers."""
        if self._api_client is None:
            from kubernetes_asyncio.client import ApiClient

            client = ApiClient(configuration=self._base.configuration)
            client.rest_client = _ImpersonatingRest(client.rest_client)  # type: ignore[assignment]
            self._api_client = client
        return self._api_client

    async def close(self) -> None:
        """Close the HTTP session (idempotent)."""
        if self._api_client is not None:
            client, self._api_client = self._api_client, None
            await client.close()
