"""GraphQL ``cluster`` (how current the served data is) and the ``extensions.stale`` entry.

``Query.cluster`` answers ``{ name synced stale since error staleKinds lastSuccess }`` from
``workload_map.kube.freshness``. ``StaleExtension`` adds ``"extensions": {"stale": {...}}`` to every
query or mutation answered while the cache is stale, so a client that did not ask for
``cluster`` still learns that the data may be out of date (GraphQL spec, "Response
Format": ``extensions`` is reserved for such implementation-specific additions,
https://spec.graphql.org/October2021/#sec-Response-Format).
"""

from __future__ import annotations

from typing import Any

import strawberry
from strawberry.extensions import SchemaExtension

from workload_map.graphql.context import Context
from workload_map.service.reads import Freshness


def freshness_of(context: Context) -> Freshness:
    """The freshness of the data behind a GraphQL context (several clusters: stale when any is).

    The one its request read for its kept-answer stamp when there is one (``Context.freshness``).
    """
    return context.freshness if context.freshness is not None else context.service.freshness()


class StaleExtension(SchemaExtension):
    """Adds ``extensions.stale = {since, error, staleKinds}`` to answers served while stale."""

    def get_results(self) -> dict[str, Any]:
        """The ``extensions`` entries of this operation (none while fresh)."""
        context = self.execution_context.context
        if not isinstance(context, Context):  # an operation executed without the server's context
            return {}
        summary = freshness_of(context)
        if not summary.stale:
            return {}
        return {"stale": {"since": summary.since_iso, "error": summary.error,
                          "staleKinds": list(summary.stale_kinds)}}


@strawberry.type(description="How current the data served is (see docs/clusters.md \"Staleness and recovery\"): synced once every watched "
                             "kind listed; stale while a list/watch has failed for longer than --stale-after.")
class Cluster:
    """Adapter over :class:`workload_map.kube.freshness.Freshness` (one cluster, or with several the combined one)."""

    name: str
    freshness: strawberry.Private[Freshness]

    @strawberry.field(description="Every watched kind has listed once (or is reported missing/forbidden).")
    def synced(self) -> bool:
        """Synced."""
        return self.freshness.synced

    @strawberry.field(description="Some kind's list/watch has been failing for longer than the threshold: answers "
                                  "may be out of date (they carry extensions.stale).")
    def stale(self) -> bool:
        """Stale."""
        return self.freshness.stale

    @strawberry.field(description="While stale: when the outage began (RFC 3339, UTC); null otherwise.")
    def since(self) -> str | None:
        """Outage start."""
        return self.freshness.since_iso

    @strawberry.field(description="Error text of a failing list/watch; empty when none is failing.")
    def error(self) -> str:
        """Error text."""
        return self.freshness.error

    @strawberry.field(description="RFC 3339 time by which every watched kind had last heard from the API server "
                                  "(a list, accepted watch, event or bookmark); null until every kind has.")
    def last_success(self) -> str | None:
        """Oldest last contact."""
        return self.freshness.last_success_iso

    @strawberry.field(description="group/version/Kind of every stale kind, sorted.")
    def stale_kinds(self) -> list[str]:
        """Stale kinds."""
        return list(self.freshness.stale_kinds)


def clusters_of(context: Context) -> list[Cluster]:
    """Every cluster served, in command-line order (one entry for a single cluster)."""
    by_cluster = context.service.freshness_by_cluster()
    if len(by_cluster) > 1:
        return [Cluster(name=name, freshness=f) for name, f in by_cluster.items()]
    return [Cluster(name=context.cluster, freshness=freshness_of(context))]
