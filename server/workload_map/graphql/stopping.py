"""Stop a GraphQL operation's work when its request is given up (issue 29 item 3).

The operation runs in the query thread (``workload_map.api.offload``); cancelling its task
only takes effect at its next ``await``, while completing a page of 500 workloads is one
synchronous stretch of seconds. So the view hands each operation a :class:`threading.Event`
in its request scope (:data:`STOP_KEY`), sets it when the request ends (answered, timed
out with 504, or the client gone), and :class:`StoppableExecution` checks it before every
field: a set event raises ``CancelledError`` (a ``BaseException``, which graphql-core's
per-field error handling does not catch), so the whole operation unwinds at once and the
values it built become garbage.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

STOP_KEY = "wmap.stop"
"""Request scope key of the operation's stop event (a :class:`threading.Event`)."""


class StoppableExecution(StrawberryGraphQLCoreExecutionContext):
    """graphql-core execution that ends when its request's stop event is set."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        request = getattr(self.context_value, "request", None)
        stop = getattr(request, "scope", {}).get(STOP_KEY) if request is not None else None
        self.stop_event: threading.Event | None = stop if isinstance(stop, threading.Event) else None

    def execute_field(self, *args: Any, **kwargs: Any) -> Any:
        """graphql-core's field execution, after checking the stop event.

        Raises:
            asyncio.CancelledError: the request was given up.
        """
        if self.stop_event is not None and self.stop_event.is_set():
            raise asyncio.CancelledError("the request ended; its GraphQL operation stops")
        return super().execute_field(*args, **kwargs)
