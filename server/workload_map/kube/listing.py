"""The list half of a reflector: every page of a collection, prepared as it arrives.

``list_all`` pages through a collection (``limit`` + ``continue``, no resourceVersion: a
consistent read, kubernetes/client-go ``tools/pager``) and returns its items and the
list's resourceVersion. Two things keep a large list close to the cost of reading it raw
(issue 23, live ready and relist targets):

- **Pipelining.** The request for page N+1 goes out as soon as page N has arrived, so the
  API server encodes the next page while this process prepares the current one; at most
  two pages are in flight (one being prepared, one being fetched and decoded).
- **Preparing off the loop.** ``prepare`` (the sink's trimmer) runs over each page in a
  worker thread; a sink may return the object it already holds for an item whose uid and
  resourceVersion it has (a relist after an API server restart then costs no trimming for
  the unchanged objects). After each page ``gc.freeze()`` moves what is alive into the
  collector's permanent generation: the prepared objects live as long as the cache, and
  frozen, the full passes a growing heap triggers no longer walk them (they stopped the
  event loop for up to a second during a cold start of 20,000 pods; the snapshot loader
  does the same, ``workload_map.kube.snapshotload``).
  https://docs.python.org/3/library/gc.html#gc.freeze
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from workload_map.kube.errors import NETWORK, KubeApiError
from workload_map.kube.memory import collector_paused

MAX_LIST_PAGES = 100_000
"""Upper bound on pages in one list (50 M objects at 500 a page): stops a looping server."""

Prepare = Callable[[Mapping[str, Any]], dict[str, Any]]
"""A sink's ``prepare``: the copy of a list item the sink will hold (thread-safe, no state change)."""


class ListWatch(Protocol):
    """The API calls a reflector makes (``workload_map.kube.api.ResourceClient`` in production)."""

    async def list_page(self, *, limit: int, continue_token: str | None) -> dict[str, Any]:
        """One page: ``{"metadata": {"resourceVersion", "continue"?}, "items": [...]}``."""
        ...

    def watch(
        self, *, resource_version: str, timeout_seconds: int, read_timeout: float
    ) -> AbstractAsyncContextManager[AsyncIterator[dict[str, Any]]]:
        """A stream of ``{"type": ..., "object": {...}}`` watch events."""
        ...


class Listed(list[dict[str, Any]]):
    """The items of one list, in server order; ``prepared``: each went through ``prepare``."""

    prepared: bool = False


async def list_all(source: ListWatch, prepare: Prepare | None, page_size: int) -> tuple[Listed, str]:
    """Every item of ``source``'s collection and the list's resourceVersion.

    Args:
        source: the list calls.
        prepare: applied to every item (in a worker thread), or ``None`` to keep items as decoded.
        page_size: ``limit`` of each request.

    Raises:
        KubeApiError: a page failed (410 for an expired continue token: the caller lists
            again), or the list did not end after ``MAX_LIST_PAGES`` pages.
        asyncio.CancelledError: the caller was cancelled (a page in flight is cancelled too).
    """
    items = Listed()
    items.prepared = prepare is not None
    resource_version = ""

    def fetch(token: str | None) -> asyncio.Future[dict[str, Any]]:
        return asyncio.ensure_future(source.list_page(limit=page_size, continue_token=token))

    pending = fetch(None)
    try:
        for _ in range(MAX_LIST_PAGES):
            page = await pending
            raw = [i for i in page.get("items") or [] if isinstance(i, dict)]
            meta = page.get("metadata") or {}
            del page  # only the prepared copies outlive the page
            resource_version = str(meta.get("resourceVersion") or resource_version)
            token = meta.get("continue") or None
            if token:
                pending = fetch(token)
                await asyncio.sleep(0)  # let the request go out before the CPU work below
            items.extend(await asyncio.to_thread(_prepare_page, prepare, raw) if prepare else raw)
            del raw
            if not token:
                return items, resource_version
        raise KubeApiError(NETWORK, "TooManyPages", f"list did not end after {MAX_LIST_PAGES} pages")
    finally:
        if not pending.done():
            pending.cancel()
            await asyncio.gather(pending, return_exceptions=True)


def _prepare_page(prepare: Prepare, raw: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``prepare`` of every item of a page, then ``gc.freeze()`` (see the module docstring)."""
    with collector_paused():
        out = [prepare(item) for item in raw]
    gc.freeze()
    return out
