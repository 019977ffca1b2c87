"""GraphQL queries run off the event loop: a thread with an asyncio loop of its own.

Why: one page of workloads with roles and pods is 40-90 ms of strawberry / graphql-core
field completion in pure Python, with no ``await`` in between. On the server's event loop
200 such queries held ``/livez`` for seconds (issue 12). Here the server's loop only reads
the request, admits it (``workload_map.api.admission``) and awaits a future; parsing, the cost check,
validation, execution and the JSON encoding of the answer run in the query thread.

Why a thread and not a process: the materialized views live in the server process (a
process would need a copy of them). The GIL: the event loop releases it at every socket
call and then waits for the query thread to hand it back, at most the switch interval
(``sys.setswitchinterval``); the query thread lowers it from Python's 5 ms to
:data:`SWITCH_INTERVAL_S` (1 ms) when it starts, so a ``/livez`` (accept, read, write,
close) waits a few ms at most for the GIL, not 20 ms. Why one thread: the work is
CPU-bound Python, so more threads add no throughput under the GIL, only more contention
for it.

Where a query needs something bound to the server's loop (access reviews with their
caches, semaphores and API clients; mutations), it hops back with :func:`on_loop`. The
views are read through ``ViewStore.snapshot`` (consistent while the loop writes).

Cancellation: cancelling the awaiting request (the request budget of
``workload_map.api.deadline.DeadlineMiddleware``) cancels the query's task in the thread at
its next ``await``; a synchronous stretch in progress finishes first (it is bounded by the
cost limit of ``workload_map.graphql.cost``).
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from workload_map.logs import logger

log = logger(__name__)

T = TypeVar("T")

SWITCH_INTERVAL_S = 0.001
"""GIL switch interval set when the query thread starts (Python's default is 5 ms)."""


class QueryThread:
    """A daemon thread running an asyncio loop that executes submitted coroutines.

    Started on first use, shared by every app of the process (each submission carries its
    own caller's loop, so tests with many apps and loops share it safely).

    Args:
        name: the thread's name (``threading.current_thread().name`` inside a query).
    """

    def __init__(self, name: str = "wmap-graphql") -> None:
        self.name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def loop(self) -> asyncio.AbstractEventLoop:
        """The thread's loop, starting the thread the first time."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            return loop
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                ready = threading.Event()
                holder: list[asyncio.AbstractEventLoop] = []

                def main() -> None:
                    loop = asyncio.new_event_loop()
                    holder.append(loop)
                    asyncio.set_event_loop(loop)
                    ready.set()
                    loop.run_forever()

                if sys.getswitchinterval() > SWITCH_INTERVAL_S:
                    sys.setswitchinterval(SWITCH_INTERVAL_S)
                threading.Thread(target=main, name=self.name, daemon=True).start()
                if not ready.wait(10):
                    raise RuntimeError(f"the {self.name} thread did not start")
                self._loop = holder[0]
            return self._loop

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` in the thread; await its result from the caller's loop.

        Cancelling this await cancels the coroutine's task in the thread.

        Raises:
            Exception: whatever ``coro`` raises.
        """
        future = asyncio.run_coroutine_threadsafe(coro, self.loop())
        return await asyncio.wrap_future(future)


QUERIES = QueryThread()
"""The process-wide query thread used by ``workload_map.api.graphql``."""


async def on_loop(loop: asyncio.AbstractEventLoop | None, coro: Coroutine[Any, Any, T]) -> T:
    """Await ``coro`` on ``loop`` (the server's): at once when already there or ``loop`` is None.

    For code in the query thread that needs objects bound to the server's loop.

    Raises:
        Exception: whatever ``coro`` raises.
    """
    if loop is None or loop is asyncio.get_running_loop():
        return await coro
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))
