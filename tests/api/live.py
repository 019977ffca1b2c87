"""Run the app under a real uvicorn server on 127.0.0.1 inside the test's event loop."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Callable

import uvicorn
from starlette.applications import Starlette


@contextlib.asynccontextmanager
async def serving(app: Starlette, *, timeout: float = 10.0) -> AsyncIterator[str]:
    """Serve ``app`` on a free loopback port; yields ``127.0.0.1:<port>``; stops on exit."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, lifespan="on", ws="websockets-sansio"))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        await wait_until(lambda: server.started or task.done(), timeout)
        if task.done():
            task.result()
        yield f"127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, timeout)
        sock.close()


async def wait_until(predicate: Callable[[], bool], timeout: float, step: float = 0.02) -> None:
    """Poll ``predicate`` until true; ``TimeoutError`` after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise TimeoutError("condition not met in time")
        await asyncio.sleep(step)
