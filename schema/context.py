"""The typed GraphQL context: what every resolver may use (``Info[Context, None]``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from server.definitions.registry import DefinitionRegistry
from server.errors import CacheNotReady
from server.kube.reader import Reader
from server.service import WorkloadService
from server.state import Registrar


@dataclass(slots=True)
class Context:
    """Per-request context built by ``server.api.graphql``.

    Attributes:
        service: workload listing and resolution.
        registrar: the definition write path.
        cluster: name of the cluster this server reads (the ``cluster`` filter and field).
        is_ready: True once the informer caches are synced and start-up finished.
        caller: authenticated user name, when authentication is on.
        request: the starlette request or websocket (for transports; resolvers ignore it).
        response: the sub-response strawberry merges into the HTTP answer.
    """

    service: WorkloadService
    registrar: Registrar
    cluster: str
    is_ready: Callable[[], bool]
    caller: str | None = None
    request: Any = None
    response: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def reader(self) -> Reader:
        """The cache reader behind the service."""
        return self.service.reader

    @property
    def registry(self) -> DefinitionRegistry:
        """The definitions in force."""
        return self.service.registry

    def require_ready(self) -> None:
        """Raise ``CacheNotReady`` until the caches are synced."""
        if not self.is_ready():
            raise CacheNotReady("informer caches are not synced yet; retry shortly")
