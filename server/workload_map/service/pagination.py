"""Cursor pagination over sorted workload views, shared by GraphQL and REST.

Order: (namespace, kind, group, name, cluster): the cluster breaks the tie of the same
workload in several clusters (one cluster: always the same). A cursor is the URL-safe base64 of that key as a
JSON array, so a page boundary survives inserts and deletes elsewhere in the list (the
next page starts after the key, not at an offset).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import json
import threading
from collections.abc import Sequence

from cachetools import LRUCache
from msgspec import Struct

from workload_map.errors import InvalidRequest
from workload_map.resolution import WorkloadView

MAX_PAGE_SIZE = 500
DEFAULT_PAGE_SIZE = 100

SortKey = tuple[str, str, str, str, str]


def sort_key(view: WorkloadView) -> SortKey:
    """The order workloads are listed in."""
    return (view.namespace or "", view.kind, view.group, view.name, view.cluster)


def encode_cursor(key: SortKey) -> str:
    """Opaque cursor for ``key``."""
    return base64.urlsafe_b64encode(json.dumps(list(key), separators=(",", ":")).encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> SortKey:
    """The key inside a cursor.

    Raises:
        InvalidRequest: not a cursor this server issued.
    """
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        value = json.loads(raw)
    except (ValueError, binascii.Error):
        raise InvalidRequest(f"invalid cursor {cursor!r}") from None
    if not (isinstance(value, list) and len(value) in (4, 5) and all(isinstance(v, str) for v in value)):
        raise InvalidRequest(f"invalid cursor {cursor!r}")
    return (value[0], value[1], value[2], value[3], value[4] if len(value) == 5 else "")


class Page(Struct, frozen=True):
    """One page: its views, the total before paging, and whether more follow."""

    items: list[WorkloadView]
    total: int
    has_next: bool
    has_previous: bool

    @property
    def end_cursor(self) -> str | None:
        """Cursor of the last item (pass as ``after`` for the next page)."""
        return encode_cursor(sort_key(self.items[-1])) if self.items else None

    @property
    def start_cursor(self) -> str | None:
        """Cursor of the first item."""
        return encode_cursor(sort_key(self.items[0])) if self.items else None


def check_page_size(first: int | None, *, name: str = "first") -> int:
    """``first`` or the default, within 1..MAX_PAGE_SIZE.

    Raises:
        InvalidRequest: out of range (the message states the limit).
    """
    size = DEFAULT_PAGE_SIZE if first is None else first
    if not 1 <= size <= MAX_PAGE_SIZE:
        raise InvalidRequest(f"{name} must be between 1 and {MAX_PAGE_SIZE} (got {size}); "
                             "page with the returned cursor")
    return size


def paginate(views: Sequence[WorkloadView], *, first: int | None, after: str | None, name: str = "first") -> Page:
    """The page of ``views`` after the cursor ``after``, at most ``first`` long.

    Raises:
        InvalidRequest: bad page size or cursor.
    """
    size = check_page_size(first, name=name)
    ordered, keys = _order(views)
    start = bisect.bisect_right(keys, decode_cursor(after)) if after else 0  # the first key past the cursor
    items = ordered[start:start + size]
    return Page(items, len(ordered), start + size < len(ordered), start > 0)


ORDERS_KEPT = 4
"""Lists whose order and sort keys :func:`paginate` keeps (the service's lists of the last few
generations; each kept list holds its views, so few are kept)."""

_orders: LRUCache[int, tuple[Sequence[WorkloadView], int, list[WorkloadView], list[SortKey]]] = \
    LRUCache(maxsize=ORDERS_KEPT)
_orders_lock = threading.Lock()


def _order(views: Sequence[WorkloadView]) -> tuple[list[WorkloadView], list[SortKey]]:
    """``views`` sorted by :func:`sort_key`, and their keys, kept per list object.

    The service hands out one list per view generation and filter set, never changed
    afterwards, and every page of a walk pages that same list: sorting it and building its
    20,000 keys for every page was most of a page's cost at 20,000 workloads. A list is known
    again by identity and length (it is held, so its id is not reused while kept).
    """
    with _orders_lock:
        kept = _orders.get(id(views))
    if kept is not None and kept[0] is views and kept[1] == len(views):
        return kept[2], kept[3]
    ordered = sorted(views, key=sort_key)
    keys = [sort_key(v) for v in ordered]
    with _orders_lock:
        _orders[id(views)] = (views, len(views), ordered, keys)
    return ordered, keys
