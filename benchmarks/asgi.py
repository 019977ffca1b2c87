"""The benchmarks' in-process HTTP client: ``httpx.AsyncClient`` over ``httpx.ASGITransport``.

httpx's ASGI transport asks, on every request, whether it runs under trio by importing
``sniffio`` (``httpx._transports.asgi.is_running_trio``). sniffio is not installed here, so
each request repeats a failed import: a search of every ``sys.path`` entry, about a third
of a millisecond per request under load (py-spy of the live churn figure at 200 updates/s:
8 % of the server process's samples, more than the freshness summary it was measuring).
That cost is the benchmark client's, not the server's: :func:`in_process_client` records
sniffio as absent (``sys.modules["sniffio"] = None``, which makes the import fail at once)
when it cannot be imported anyway, so the answer is the same and the search is gone.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

import httpx


def in_process_client(app: Any, *, base_url: str = "http://bench", timeout: float | None = 600.0) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` calling the ASGI ``app`` in this process (use it as a context manager)."""
    if "sniffio" not in sys.modules and importlib.util.find_spec("sniffio") is None:
        sys.modules["sniffio"] = None  # type: ignore[assignment]  # import fails at once: not installed
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=base_url, timeout=timeout)
