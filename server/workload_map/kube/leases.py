"""Leader election through a ``coordination.k8s.io/v1`` Lease, as Kubernetes controllers do.

One replica holds the Lease ``NAME`` in ``NAMESPACE`` and renews it every
``retry_period`` seconds; the others read it and take it over only once it has not been
renewed for ``lease_duration`` seconds as measured on their own clock (the time they last
saw ``holderIdentity``/``renewTime`` change), so clock skew between replicas does not
matter. A leader that cannot renew for ``renew_deadline`` seconds steps down. On stop the
leader releases the Lease (empty holder), so another replica takes over at its next try.
Rules follow client-go's ``tools/leaderelection`` (restated, not copied):
https://kubernetes.io/docs/concepts/architecture/leases/#leader-election

Concurrency: every write carries the ``resourceVersion`` read before it; a 409 means another
replica won the race, and this one is a follower. API failures are logged and retried at the
next period; they are never raised to the caller.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from msgspec import Struct

from workload_map.kube.api import KubeApi
from workload_map.kube.errors import KubeApiError
from workload_map.kube.rest import send_json
from workload_map.logs import logger

log = logger(__name__)

LEASES = "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"


def micro_time(moment: datetime | None = None) -> str:
    """A Kubernetes ``MicroTime`` (RFC 3339 with microseconds, UTC): ``2026-12-01T23:12:08.123456Z``."""
    return (moment or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaseTimings(Struct, frozen=True):
    """Leader election periods, seconds.

    A Lease not renewed for ``lease_duration`` may be taken over; the leader tries every
    ``retry_period`` and steps down after ``renew_deadline`` without renewal.
    """

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


class LeaderElector:
    """Campaign for one Lease; :attr:`is_leader` says whether this replica holds it.

    Args:
        client: a ``KubeClient``.
        namespace / name: the Lease.
        identity: this replica (pod name plus a random suffix).
        timings: see :class:`LeaseTimings`.
        on_change: called with the new :attr:`is_leader` after every change.
        clock: monotonic seconds (tests pass a fake).
    """

    def __init__(self, client: Any, namespace: str, name: str, identity: str, *,
                 timings: LeaseTimings = LeaseTimings(), on_change: Callable[[bool], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._client, self.namespace, self.name, self.identity = client, namespace, name, identity
        self.timings, self._on_change, self._clock = timings, on_change, clock
        self.is_leader = False
        self._observed: tuple[str, str] | None = None
        self._observed_at = 0.0
        self._renewed_at = 0.0

    @property
    def _path(self) -> str:
        return LEASES.format(namespace=self.namespace)

    async def run(self) -> None:
        """Try to acquire or renew every ``retry_period`` until cancelled; release on exit."""
        try:
            while True:
                await self.try_once()
                await asyncio.sleep(self.timings.retry_period)
        finally:
            if self.is_leader:
                await asyncio.shield(self.release())

    async def try_once(self) -> bool:
        """One acquire-or-renew round; returns :attr:`is_leader` afterwards."""
        status, lease = await self._get()
        if status == 404:
            created, _ = await send_json(self._client, "POST", self._path, self._lease_body(None))
            self._set(created == 201)
        elif status == 200:
            await self._acquire_or_renew(lease)
        else:
            log.warning("cannot read Lease %s/%s: %s %s", self.namespace, self.name, status, lease.get("message", ""))
            self._check_deadline()
        return self.is_leader

    async def _get(self) -> tuple[int, dict[str, Any]]:
        try:
            return 200, await KubeApi(self._client).get_json(f"{self._path}/{self.name}")
        except KubeApiError as exc:
            return exc.status, {"message": exc.message or exc.reason}

    async def _acquire_or_renew(self, lease: dict[str, Any]) -> None:
        spec = lease.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        now = self._clock()
        seen = (holder, str(spec.get("renewTime") or ""))
        if seen != self._observed:
            self._observed, self._observed_at = seen, now
        duration = float(spec.get("leaseDurationSeconds") or self.timings.lease_duration)
        if holder and holder != self.identity and now - self._observed_at < duration:
            self._set(False)
            return
        body = {**lease, "spec": self._spec(spec)}
        status, answer = await send_json(self._client, "PUT", f"{self._path}/{self.name}", body)
        if status == 200:
            self._set(True)
        elif status == 409:
            self._set(False)
        else:
            log.warning("cannot write Lease %s/%s: %s %s", self.namespace, self.name, status,
                        answer.get("message", ""))
            self._check_deadline()

    def _spec(self, current: dict[str, Any] | None) -> dict[str, Any]:
        current = current or {}
        mine = current.get("holderIdentity") == self.identity
        transitions = int(current.get("leaseTransitions") or 0)
        now = micro_time()
        return {"holderIdentity": self.identity, "leaseDurationSeconds": int(self.timings.lease_duration),
                "acquireTime": current.get("acquireTime") if mine else now, "renewTime": now,
                "leaseTransitions": transitions if mine or not current else transitions + 1}

    def _lease_body(self, current: dict[str, Any] | None) -> dict[str, Any]:
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace}, "spec": self._spec(current)}

    def _check_deadline(self) -> None:
        if self.is_leader and self._clock() - self._renewed_at > self.timings.renew_deadline:
            log.warning("could not renew Lease %s/%s for %.0f s: stepping down", self.namespace, self.name,
                        self.timings.renew_deadline)
            self._set(False)

    def _set(self, leader: bool) -> None:
        if leader:
            self._renewed_at = self._clock()
        if leader != self.is_leader:
            self.is_leader = leader
            log.info("%s Lease %s/%s as %s", "acquired" if leader else "lost", self.namespace, self.name,
                     self.identity)
            if self._on_change is not None:
                self._on_change(leader)

    async def release(self) -> None:
        """Give the Lease up (empty holder, 1 s duration) if this replica holds it."""
        status, lease = await self._get()
        if status != 200 or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
            self._set(False)
            return
        spec = {**lease["spec"], "holderIdentity": "", "leaseDurationSeconds": 1, "renewTime": micro_time()}
        await send_json(self._client, "PUT", f"{self._path}/{self.name}", {**lease, "spec": spec})
        self._set(False)
