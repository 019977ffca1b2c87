"""Run the app under a real uvicorn server on 127.0.0.1 inside the test's event loop."""

from __future__ import annotations

import asyncio
import contextlib
import io
import socket
import sys
import traceback
from collections.abc import AsyncIterator, Callable

import uvicorn
from starlette.applications import Starlette


@contextlib.asynccontextmanager
async def serving(app: Starlette, *, timeout: float = 10.0) -> AsyncIterator[str]:
    """Serve ``app`` on a free loopback port; yields ``127.0.0.1:<port>``; stops on exit.

    Open connections get 5 s to finish at the stop, as under ``wmap serve``. A server still
    running ``timeout`` seconds after the stop fails the test with a ``TimeoutError`` that
    names what it waits on (the stack of every pending task and thread).
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, lifespan="on", ws="websockets-sansio",
                                          timeout_graceful_shutdown=5))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        await wait_until(lambda: server.started or task.done(), timeout)
        if task.done():
            task.result()
        yield f"127.0.0.1:{port}"
    finally:
        server.should_exit = True
        try:
            done, _ = await asyncio.wait({task}, timeout=timeout)
            if not done:
                stuck = _stacks()
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                raise TimeoutError(f"the server did not stop within {timeout} s; waiting in:\n{stuck}")
            task.result()
        finally:
            sock.close()


def _stacks() -> str:
    """The stacks of the pending tasks of this loop and of every thread (a stuck stop's report).

    Tasks waiting at the same place (the informers' watches: dozens) are given once with
    their names, after the tasks that wait alone, so the report stays short enough to be
    read whole where a CI log is cut.
    """
    places: dict[str, list[str]] = {}
    for pending in asyncio.all_tasks():
        if pending is not asyncio.current_task():
            stack = io.StringIO()
            pending.print_stack(limit=12, file=stack)
            places.setdefault(stack.getvalue().split("\n", 1)[-1], []).append(pending.get_name())
    out = io.StringIO()
    for place, names in sorted(places.items(), key=lambda item: len(item[1])):
        out.write(f"{len(names)} task(s) {', '.join(sorted(names))}:\n{place}")
    for ident, frame in sys._current_frames().items():
        out.write(f"thread {ident}:\n" + "".join(traceback.format_stack(frame, limit=12)))
    return out.getvalue()


async def wait_until(predicate: Callable[[], bool], timeout: float, step: float = 0.02) -> None:
    """Poll ``predicate`` until true; ``TimeoutError`` after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise TimeoutError("condition not met in time")
        await asyncio.sleep(step)
