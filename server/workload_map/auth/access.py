"""Authentication and authorization decisions, cached, and the per-request ``Guard``.

Two policies:

* :class:`OpenAccess` (``--auth none``): every request is the local caller and everything
  is allowed (local use only; ``workload_map.app`` warns on a non-loopback address).
* :class:`KubernetesAccess` (``--auth kubernetes``): the bearer token is checked with a
  TokenReview and each permission with a SubjectAccessReview (the kube-rbac-proxy model).
  Decisions are cached in ``cachetools.TTLCache``s keyed by the SHA-256 of the token plus
  the attributes, never by the token itself: identities for ``ttl`` seconds, rejected tokens
  for ``negative_ttl``, permissions (allowed and denied) for ``ttl``. Concurrent asks for
  the same key share one review; at most ``concurrency`` reviews are in flight.

Errors: ``Unauthorized`` (401) for a missing or rejected token; ``Forbidden`` (403) from
:meth:`Guard.require`; ``ReviewUnavailable`` (503) when the API server cannot answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable, Iterable
from typing import Any, Protocol, TypeVar

from cachetools import TTLCache
from msgspec import Struct

from workload_map.auth.identity import LOCAL, Caller, token_key
from workload_map.errors import Forbidden, Unauthorized
from workload_map.kube.reviews import AccessAttributes, ReviewedUser
from workload_map.kube.reviews import ReviewUnavailable as ReviewUnavailable  # re-exported for workload_map.graphql
from workload_map.logs import logger

log = logger(__name__)

T = TypeVar("T")

DECISION_TTL_S = 30.0
NEGATIVE_TTL_S = 5.0
REVIEW_CONCURRENCY = 16
MAX_ENTRIES = 50_000


class Reviewer(Protocol):
    """What :class:`KubernetesAccess` needs (``workload_map.kube.reviews.KubeReviews``)."""

    async def review_token(self, token: str) -> ReviewedUser | None:
        """The token's user, or None when it does not authenticate."""
        ...

    async def review_access(self, user: ReviewedUser, attributes: AccessAttributes) -> bool:
        """True when ``user`` may do ``attributes``."""
        ...


class Access(Protocol):
    """A policy: authenticate a token, decide a permission."""

    @property
    def is_open(self) -> bool:
        """True when nothing is checked (``--auth none``)."""
        ...

    async def authenticate(self, token: str | None) -> Caller:
        """The caller for ``token``. Raises ``Unauthorized``."""
        ...

    async def allowed(self, caller: Caller, attributes: AccessAttributes) -> bool:
        """True when ``caller`` may do ``attributes``."""
        ...


class OpenAccess:
    """``--auth none``: the local caller, allowed everything."""

    is_open = True

    async def authenticate(self, token: str | None) -> Caller:
        """Always :data:`~workload_map.auth.identity.LOCAL`."""
        return LOCAL

    async def allowed(self, caller: Caller, attributes: AccessAttributes) -> bool:
        """Always True."""
        return True


class ClosedAccess:
    """Nothing allowed: the guard of a websocket that has not authenticated yet."""

    is_open = False

    async def authenticate(self, token: str | None) -> Caller:
        """Always refuses.

        Raises:
            Unauthorized: always.
        """
        raise Unauthorized("not authenticated")

    async def allowed(self, caller: Caller, attributes: AccessAttributes) -> bool:
        """Always False."""
        return False


class KubernetesAccess:
    """TokenReview + SubjectAccessReview with TTL caches (see the module docstring).

    Args:
        reviewer: sends the reviews.
        ttl: seconds an identity or a permission decision is reused.
        negative_ttl: seconds a rejected token is remembered.
        concurrency: most reviews in flight at once (all requests together).
        max_entries: size bound of each cache.

    Attributes:
        token_reviews / access_reviews: reviews sent so far (cache misses).
    """

    is_open = False

    def __init__(self, reviewer: Reviewer, *, ttl: float = DECISION_TTL_S, negative_ttl: float = NEGATIVE_TTL_S,
                 concurrency: int = REVIEW_CONCURRENCY, max_entries: int = MAX_ENTRIES) -> None:
        self._reviewer = reviewer
        self._users: TTLCache[str, Caller] = TTLCache(max_entries, ttl)
        self._rejected: TTLCache[str, bool] = TTLCache(max_entries, negative_ttl)
        self._decisions: TTLCache[tuple[str, AccessAttributes], bool] = TTLCache(max_entries, ttl)
        self._pending: dict[Hashable, asyncio.Future[Any]] = {}
        self._slots = asyncio.Semaphore(max(concurrency, 1))
        self.token_reviews = 0
        self.access_reviews = 0

    async def authenticate(self, token: str | None) -> Caller:
        """The caller ``token`` authenticates as (cached).

        Raises:
            Unauthorized: no token, or the API server does not accept it.
            ReviewUnavailable: the TokenReview could not be made.
        """
        if not token:
            raise Unauthorized("a bearer token is required (Authorization: Bearer <token>)")
        key = token_key(token)
        caller = self._users.get(key)
        if caller is None and key not in self._rejected:
            caller = await self._shared(("token", key), lambda: self._review_token(token, key))
        if caller is None:
            raise Unauthorized("the bearer token is not valid")
        return caller

    async def _review_token(self, token: str, key: str) -> Caller | None:
        self.token_reviews += 1
        user = await self._reviewer.review_token(token)
        if user is None or not user.username:
            self._rejected[key] = True
            return None
        caller = Caller(user, key)
        self._users[key] = caller
        return caller

    async def allowed(self, caller: Caller, attributes: AccessAttributes) -> bool:
        """The SubjectAccessReview decision for ``caller`` (cached by token hash + attributes).

        Raises:
            ReviewUnavailable: the review could not be made.
        """
        key = (caller.token_key or caller.name, attributes)
        decision = self._decisions.get(key)
        if decision is None:
            decision = await self._shared(("access", key), lambda: self._review_access(caller, attributes, key))
        return decision

    async def _review_access(self, caller: Caller, attributes: AccessAttributes,
                             key: tuple[str, AccessAttributes]) -> bool:
        self.access_reviews += 1
        decision = await self._reviewer.review_access(caller.user, attributes)
        self._decisions[key] = decision
        return decision

    async def _shared(self, key: Hashable, review: Callable[[], Awaitable[T]]) -> T:
        """Run ``review`` once per key at a time (bounded by the semaphore); every asker awaits it."""
        pending = self._pending.get(key)
        if pending is None:
            pending = asyncio.ensure_future(self._limited(review))
            self._pending[key] = pending
            pending.add_done_callback(lambda done: self._settle(key, done))
        result: T = await asyncio.shield(pending)
        return result

    async def _limited(self, review: Callable[[], Awaitable[T]]) -> T:
        async with self._slots:
            return await review()

    def _settle(self, key: Hashable, done: asyncio.Future[Any]) -> None:
        self._pending.pop(key, None)
        if not done.cancelled():
            done.exception()  # retrieved: a failure nobody awaits any more is not logged as lost


class Guard(Struct, frozen=True):
    """One request's caller bound to the policy; what handlers and resolvers ask.

    Attributes:
        access: the policy.
        caller: the authenticated caller.
    """

    access: Access
    caller: Caller

    @property
    def is_open(self) -> bool:
        """True when nothing is checked (``--auth none``)."""
        return self.access.is_open

    async def allows(self, verb: str, group: str = "", resource: str = "", namespace: str | None = "", *,
                     name: str = "", path: str = "") -> bool:
        """May the caller do ``verb`` on ``group``/``resource``, or on the URL ``path``?

        ``namespace`` "" or None means all namespaces / cluster scope; ``path`` is a
        non-resource URL.

        Raises:
            ReviewUnavailable: the review could not be made.
        """
        if self.access.is_open:
            return True
        attributes = AccessAttributes(verb, group, resource, namespace or "", name, path)
        return await self.access.allowed(self.caller, attributes)

    async def allows_each(self, checks: Iterable[tuple[str, str, str, str | None]]) -> list[bool]:
        """``allows(verb, group, resource, namespace)`` for each tuple, concurrently, in order."""
        return list(await asyncio.gather(*(self.allows(*check) for check in checks)))

    async def require(self, verb: str, group: str, resource: str, namespace: str | None = "") -> None:
        """Raise ``Forbidden`` (naming the caller and the permission) unless allowed.

        Raises:
            Forbidden: not allowed.
            ReviewUnavailable: the review could not be made.
        """
        if not await self.allows(verb, group, resource, namespace):
            where = f" in namespace {namespace}" if namespace else ""
            target = f"{resource}.{group}" if group else resource
            raise Forbidden(f"user {self.caller.name!r} may not {verb} {target}{where}")


OPEN_GUARD = Guard(OpenAccess(), LOCAL)
"""The guard of every request when authentication is off."""

UNAUTHENTICATED = Guard(ClosedAccess(), Caller(ReviewedUser("system:anonymous")))
"""A guard that allows nothing (a websocket before its ``connection_init`` authenticated)."""
