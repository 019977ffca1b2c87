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
``InformerStatus``, which the rule above reads.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING
from datetime import datetime, timezone

from msgspec import Struct

from workload_map.gvk import GVK
from workload_map.kube.reader import InformerState, InformerStatus

if TYPE_CHECKING:  # the reflector module imports the Kubernetes client: not for offline reads
    from workload_map.kube.reflector import Reflector


class Freshness(Struct, frozen=True):
    """Summary of a cluster's informers.

    Attributes:
        synced: every watched kind listed once (or settled as missing/forbidden).
        stale: some kind's list/watch has failed for longer than the threshold.
        since: while stale, when the oldest outage among the stale kinds began
            (``time.time()`` seconds); ``None`` otherwise.
        error: the last error text of a failing kind (the first stale one, else the first
            one in ``error``), ``""`` when none is failing.
        stale_kinds: ``group/version/Kind`` of every stale kind, sorted.
        last_success: the oldest of the informers' last successful contacts (list,
            accepted watch, event or bookmark; ``time.time()`` seconds): every kind has
            heard from the API server since then. ``None`` until every informer has.
    """

    synced: bool
    stale: bool
    since: float | None
    error: str
    stale_kinds: tuple[str, ...] = ()
    last_success: float | None = None

    @property
    def since_iso(self) -> str | None:
        """``since`` as RFC 3339 UTC (``2026-12-01T10:00:00Z``), ``None`` when not stale."""
        return iso_time(self.since)

    @property
    def last_success_iso(self) -> str | None:
        """``last_success`` as RFC 3339 UTC, ``None`` before every kind has heard from the API server."""
        return iso_time(self.last_success)

    def to_dict(self) -> dict[str, object]:
        """JSON shape: ``{synced, stale, since, error, staleKinds, lastSuccess}`` (times RFC 3339)."""
        return {"synced": self.synced, "stale": self.stale, "since": self.since_iso, "error": self.error,
                "staleKinds": list(self.stale_kinds), "lastSuccess": iso_time(self.last_success)}


FRESH = Freshness(synced=True, stale=False, since=None, error="")
"""What a reader without informers (a snapshot) reports."""


def kind_name(gvk: GVK) -> str:
    """``core/v1/Pod`` style name of a GVK (as in ``/readyz?verbose`` and metric labels)."""
    return f"{gvk.group or 'core'}/{gvk.version}/{gvk.kind}"


def iso_time(seconds: float | None) -> str | None:
    """``time.time()`` seconds as RFC 3339 UTC with second precision; ``None`` stays ``None``."""
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


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
