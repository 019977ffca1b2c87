"""The typed GraphQL context: what every resolver may use (``Info[Context, None]``).

Queries run in the query thread (``workload_map.api.offload``), not on the server's event loop:
a resolver reads the materialized views directly (they are safe to read there) and awaits
access reviews through :meth:`Context.review`, which runs them on the server's loop where
the policy's caches and API clients live.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, TypeVar

from msgspec import Struct, field

from workload_map.auth.access import Guard
from workload_map.auth.scope import pod_namespaces
from workload_map.definitions.registry import DefinitionRegistry
from workload_map.errors import CacheNotReady
from workload_map.service.fleet import registrar_for
from workload_map.service.reads import Freshness, WorkloadReads
from workload_map.registration.registrar import Registrar

T = TypeVar("T")


class Context(Struct):
    """Per-request (per-websocket) context built by ``workload_map.api.graphql``.

    Attributes:
        service: workload listing and resolution.
        registrar: the definition write path.
        cluster: name of the cluster this server reads (the ``cluster`` filter and field).
        is_ready: True once the informer caches are synced and start-up finished.
        guard: the caller and the policy (``OPEN_GUARD`` with ``--auth none``); a websocket
            gets its guard in ``on_ws_connect``.
        request: the starlette request or websocket (for transports; resolvers ignore it).
        response: the sub-response strawberry merges into the HTTP answer.
        connection_params: the websocket ``connection_init`` payload (set by strawberry).
        writer: writes workload objects (``workload_map.service.actions.ObjectWriter``; None when
            writes are not available).
        pod_namespaces: namespaces where the caller may get pods, filled by the top-level
            resolvers before nested pod fields are resolved (see :meth:`shows_pods`).
        loop: the server's event loop (where access reviews run, see :meth:`review`);
            None: wherever the resolver runs.
        freshness: the freshness summary one HTTP request's answer is computed at, read once
            when its kept-answer stamp is (``workload_map.api.answers.stamp``): its
            ``extensions.stale`` then says what the stamp says. None: read when needed
            (a websocket context lives as long as its connection).
    """

    service: WorkloadReads
    registrar: Registrar
    cluster: str
    is_ready: Callable[[], bool]
    guard: Guard
    request: Any = None
    response: Any = None
    connection_params: Any = None
    pod_namespaces: set[str] = field(default_factory=set)
    writer: Any = None
    extra: dict[str, Any] = field(default_factory=dict)
    loop: asyncio.AbstractEventLoop | None = None
    freshness: Freshness | None = None

    @property
    def caller(self) -> str:
        """Authenticated user name (``local`` with ``--auth none``)."""
        return self.guard.caller.name

    @property
    def registry(self) -> DefinitionRegistry:
        """The definitions in force."""
        return self.service.registry

    def registrar_for(self, cluster: str | None) -> Registrar:
        """The registrar of ``cluster`` (None: the first; ``extra["registrars"]`` with several clusters).

        Raises:
            InvalidRequest: no such cluster.
        """
        return registrar_for(self.registrar, self.extra.get("registrars") or {}, self.cluster, cluster)

    def require_ready(self) -> None:
        """Raise ``CacheNotReady`` until the caches are synced."""
        if not self.is_ready():
            raise CacheNotReady("informer caches are not synced yet; retry shortly")

    async def learn_pod_access(self, namespaces: Iterable[str | None]) -> None:
        """Ask (cached) where the caller may get pods among ``namespaces``.

        The answer is remembered for :meth:`shows_pods`.

        Raises:
            ReviewUnavailable: a review could not be made.
        """
        if not self.guard.is_open:
            allowed = await self.review(pod_namespaces(self.guard, list(namespaces)))
            self.pod_namespaces |= allowed or set()

    async def review(self, check: Coroutine[Any, Any, T]) -> T:
        """Await an access check (``workload_map.auth.scope``) on the server's loop.

        The policy's caches, semaphores and API clients belong to that loop; a resolver in
        the query thread hops there and back (two loop wake-ups). With authentication off
        (``guard.is_open``) every check returns before awaiting anything, so it runs right
        here.

        Raises:
            ReviewUnavailable: a review could not be made.
        """
        loop = self.loop
        if self.guard.is_open or loop is None or loop is asyncio.get_running_loop():
            return await check
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(check, loop))

    def shows_pods(self, namespace: str | None) -> bool:
        """True when pod details in ``namespace`` may be shown (fail-closed: unknown = hidden)."""
        return self.guard.is_open or (namespace is not None and namespace in self.pod_namespaces)
