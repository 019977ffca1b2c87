"""GraphQL answers kept per view generation: a repeated read costs a lookup, not an execution.

Portals poll: the same ``gpuSummary``, the same first page of ``workloads``, the same
``workload`` every few seconds, from many browsers. Between two changes of the views the
answer is the same bytes, yet each request parsed, priced, validated, executed and encoded
it again (``gpuSummary`` over 400 namespaces: about 20 ms of graphql-core completion on the
2-core machine, for an answer the service computes in microseconds). :class:`AnswerCache`
keeps the encoded JSON of such answers and gives it back while nothing it depends on
changed (issue 23 item 5: "results assembled once per view generation").

What is kept (:func:`reads_views_only`, checked by the GraphQL endpoint): an HTTP query (not a mutation, not a
subscription or a stream) whose root fields are all in :data:`VIEW_FIELDS` (fields answered
only from the materialized views and the GPU policy), answered without errors, for a caller
whose guard is open (``--auth none``: every caller sees the same answer), charged at most
:attr:`AnswerCache.max_entry_bytes`. Everything else executes as before.

What an answer depends on, compared on every lookup (:func:`stamp`): the read service
object itself, its :meth:`~workload_map.service.reads.WorkloadReads.view_generation` (the
registry's and every cluster's view store generation: bumped by every view change and every
definition change), whether the server can answer (``CacheNotReady`` before), and the
freshness summary behind ``extensions.stale`` (stale flag, since, error, stale kinds). A
lookup whose stamp differs is a miss and the new answer replaces the old one.

The key is the request as sent: the document text, the operation name and the variables
(canonical JSON: sorted keys). Memory is bounded by the bytes kept, bodies and keys as
held in memory (:func:`charge`; :attr:`max_bytes`, least recently used first out;
``cachetools.LRUCache``).

Thread use: :meth:`get` and :meth:`put` run on the server's event loop (before and after
the hop to the query thread); a lock makes them safe from any thread anyway.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Hashable

from cachetools import LRUCache
from graphql import FieldNode, OperationDefinitionNode, OperationType
from msgspec import Struct

from workload_map.service.reads import Freshness, WorkloadReads

VIEW_FIELDS = frozenset({"workloads", "workload", "gpuSummary", "__typename"})
"""Root query fields whose answer is a function of the views, the registry and the GPU policy
only (``podWorkload`` reads the pod cache, ``cluster`` reads clocks: not kept)."""

Key = tuple[str, str | None, str]
"""(document text, operation name, variables as canonical JSON)."""


class Answer(Struct, frozen=True):
    """One kept answer: the state it was computed in and its encoded JSON."""

    stamp: Hashable
    body: str | bytes
    key_bytes: int


def stamp(service: WorkloadReads, is_ready: Callable[[], bool], fresh: Freshness | None = None) -> Hashable:
    """What a view-field answer depends on besides the request (see module docstring).

    Shape: ``(id(service), view generation, ready, (stale, since, error, stale kinds))``;
    ``fresh``: ``service.freshness()`` when the caller has read it already.
    """
    if fresh is None:
        fresh = service.freshness()
    return (id(service), service.view_generation(), is_ready(),
            (fresh.stale, fresh.since_iso, fresh.error, tuple(fresh.stale_kinds)))


def request_key(query: object, operation_name: object, variables: object) -> Key | None:
    """The cache key of a request, or None when it cannot be one (no text, variables not JSON)."""
    if not isinstance(query, str) or not (operation_name is None or isinstance(operation_name, str)):
        return None
    try:
        text = json.dumps(variables or {}, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None
    return (query, operation_name, text)


def reads_views_only(operation: OperationDefinitionNode | None) -> bool:
    """True when ``operation`` is a query of view fields only.

    That is, every root selection is a plain field of :data:`VIEW_FIELDS` (a fragment at the
    root is not: its fields would need resolving). ``operation``: the one a request runs.
    """
    if operation is None or operation.operation != OperationType.QUERY:
        return False
    selections = operation.selection_set.selections
    return bool(selections) and all(isinstance(s, FieldNode) and s.name.value in VIEW_FIELDS for s in selections)


class AnswerCache:
    """Encoded answers of view-only queries, valid while their :func:`stamp` holds.

    Args:
        max_bytes: bytes kept in all, as :func:`charge` counts them (least recently used
            dropped first).
        max_entry_bytes: an answer charged more is not kept.

    Attributes:
        hits, misses: lookups answered from the cache / not (a miss includes a stale entry).
    """

    def __init__(self, max_bytes: int = 32 * 1024 * 1024, max_entry_bytes: int = 4 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self.max_entry_bytes = max_entry_bytes
        self._answers: LRUCache[Key, Answer] = LRUCache(maxsize=max_bytes, getsizeof=_size)
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._answers)

    def get(self, key: Key, current: Hashable) -> str | bytes | None:
        """The kept body for ``key`` computed at stamp ``current``, else None (counted as a miss)."""
        with self._lock:
            answer = self._answers.get(key)
            if answer is not None and answer.stamp == current:
                self.hits += 1
                return answer.body
            self.misses += 1
            return None

    def put(self, key: Key, current: Hashable, body: str | bytes) -> None:
        """Keep ``body`` for ``key`` at stamp ``current``.

        Not kept when its :func:`charge` is over :attr:`max_entry_bytes` or :attr:`max_bytes`.
        """
        answer = Answer(current, body, _key_bytes(key))
        if _size(answer) > min(self.max_entry_bytes, self.max_bytes):
            return
        with self._lock:
            self._answers[key] = answer


def charge(key: Key, body: str | bytes) -> int:
    """Bytes one kept answer is charged.

    The memory of its body and of its key's texts (``sys.getsizeof``: a non-ASCII document
    costs 2 or 4 bytes a character), plus 200 for the objects around them.
    """
    return _size(Answer(None, body, _key_bytes(key)))


def _key_bytes(key: Key) -> int:
    return sys.getsizeof(key[0]) + sys.getsizeof(key[2])


def _size(answer: Answer) -> int:
    return sys.getsizeof(answer.body) + answer.key_bytes + 200
