"""How current the cached data of one cluster is: one summary of the informer statuses.

Every interface reports the same thing from here: ``/readyz?verbose`` (the stale line and
the error text), GraphQL ``cluster { synced stale since error }`` plus an ``extensions``
entry on answers served while stale, the REST ``X-Wmap-Stale`` header and the
``wmap_cluster_stale`` metric.

Rule: the cluster is **stale** while at least one watched kind has had its list/watch
failing for longer than ``stale_after`` seconds (``InformerStatus.stale``, decided by the
informer cache; ``--stale-after``, 30 s by default, the same order as a missed watch
bookmark, which kube-apiserver sends about every 60 s:
https://kubernetes.io/docs/reference/using-api/api-concepts/#watch-bookmarks). It stops
being stale as soon as every such kind has listed or watched successfully again. Kinds
that are ``crd_missing`` or ``forbidden`` are not stale: the API server answered, and they
are reported as such.

``aggregate`` folds the reflectors of one GVK (one per allowed namespace) into its
``InformerStatus``, which the rule above reads; :func:`freshness` sums the statuses up into
a ``Freshness`` (``workload_map.kube.reader``, beside ``InformerStatus``: ``Reader.freshness``
returns one), and :class:`FreshnessMemo` keeps an informer cache's sum between status changes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from msgspec.structs import replace

from workload_map.gvk import GVK
from workload_map.kube.reader import FRESH, Freshness, InformerState, InformerStatus

if TYPE_CHECKING:  # the reflector module imports the Kubernetes client: not for offline reads
    from workload_map.kube.reflector import Reflector


def kind_name(gvk: GVK) -> str:
    """``core/v1/Pod`` style name of a GVK (as in ``/readyz?verbose`` and metric labels)."""
    return f"{gvk.group or 'core'}/{gvk.version}/{gvk.kind}"


def freshness(states: Mapping[GVK, InformerStatus]) -> Freshness:
    """Sum up informer statuses (``InformerCache.states()``); empty means fresh and synced."""
    if not states:
        return FRESH
    stale = [s for s in states.values() if s.stale]
    failing = stale or [s for s in states.values() if s.state == "error"]
    downs = [s.down_since for s in stale if s.down_since is not None]
    contacts = [s.last_success for s in states.values() if s.state not in ("crd_missing", "forbidden")]
    return Freshness(
        synced=all(s.is_settled for s in states.values()),
        stale=bool(stale),
        since=min(downs) if downs else None,
        error=next((s.last_error for s in failing if s.last_error), ""),
        stale_kinds=tuple(sorted(kind_name(s.gvk) for s in stale)),
        last_success=None if None in contacts else min(contacts, default=None),  # type: ignore[type-var]
    )


class FreshnessMemo:
    """:func:`freshness` of one informer cache, summed up again only after a status change.

    What the summary reads changes rarely: a reflector's state, sync flag, last error or
    outage, and an informer's state, error, elected version or reflectors. The cache counts
    those changes in a version (its own changes, and ``Reflector(on_status=...)``); while the
    version holds, the kept summary is the answer. Two parts are read again on every call:

    - ``last_success`` moves with every watch event: it is the oldest ``last_success`` of
      the reflectors that count for it (``contacts``), None while one of them has none, as
      :func:`freshness` folds the kinds' statuses.
    - while any reflector is down, ``stale`` depends on the clock (``stale_after``): the
      summary is then computed in full on every call.

    A read racing a change on another thread returns the summary of just before it, as a
    full computation would.
    """

    def __init__(self) -> None:
        self._version = -1
        self._value = FRESH
        self._contacts: list[Reflector] | None = None
        self._clocked = True

    def read(self, version: int, states: Callable[[], Mapping[GVK, InformerStatus]],
             contacts: Callable[[Mapping[GVK, InformerStatus]], list[Reflector] | None]) -> Freshness:
        """The summary at status ``version``.

        Args:
            version: the cache's count of status changes.
            states: ``InformerCache.states``, called when the summary is computed in full.
            contacts: the reflectors whose ``last_success`` counts for ``states``, or None
                when the summary's ``last_success`` is None whatever the events.
        """
        if version != self._version or self._clocked:
            current = states()
            value = freshness(current)
            self._clocked = any(s.down_since is not None for s in current.values())
            self._contacts, self._value, self._version = contacts(current), value, version
            return value
        contacts_now = [r.last_success for r in self._contacts] if self._contacts is not None else [None]
        last = None if None in contacts_now else min(contacts_now, default=None)  # type: ignore[type-var]
        value = self._value
        if last != value.last_success:
            value = self._value = replace(value, last_success=last)
        return value


STATE_ORDER: tuple[InformerState, ...] = ("error", "syncing", "forbidden", "crd_missing", "synced")
"""Worst first: the state reported for a GVK watched through several reflectors (a GVK
reports ``forbidden``/``crd_missing`` only when no reflector is still failing or syncing)."""


def aggregate(gvk: GVK, reflectors: list[Reflector], count: int, plural: str,
              stale_after: float = float("inf")) -> InformerStatus:
    """One status for the reflectors of a GVK.

    Worst state, summed counters, stale when any reflector has been failing for more than
    ``stale_after`` seconds.
    """
    states = {r.state for r in reflectors}
    state = next(s for s in STATE_ORDER if s in states)
    times = [r.last_event_time for r in reflectors if r.last_event_time is not None]
    now = time.monotonic()
    downs = [r.down_since for r in reflectors if r.down_since is not None]
    successes = [r for r in reflectors if r.last_success is not None]
    oldest = min(successes, key=lambda r: r.last_success or 0.0) if len(successes) == len(reflectors) else None
    return InformerStatus(
        gvk=gvk, state=state, count=count,
        has_synced=all(r.has_synced for r in reflectors),
        last_error=next((r.last_error for r in reflectors if r.last_error), ""),
        relists=sum(r.relists for r in reflectors), events=sum(r.events for r in reflectors),
        bookmarks=sum(r.bookmarks for r in reflectors),
        watch_restarts=sum(r.watch_restarts for r in reflectors),
        last_event_age=now - max(times) if times else None, resource=plural,
        namespaces=tuple(sorted(r.namespace for r in reflectors if r.namespace)),
        stale=any(r.down_for(now) > stale_after for r in reflectors),
        down_since=min(downs) if downs else None,
        last_success=oldest.last_success if oldest is not None else None,
        last_success_age=now - oldest.last_success_mono if oldest and oldest.last_success_mono else None,
    )
