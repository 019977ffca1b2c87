"""Keep every Karta's ``status`` current (cluster mode): the one writer among the replicas.

Each round (every ``interval`` seconds, or at once when definitions or CRDs change) the
controller reads the Karta objects of the informer cache and works out their findings:

* validation: the static checks (fields, jq) of the object as it is now, then the trial
  evaluation's verdict as recorded by the definition intake (``Registrar.skipped``); a
  Karta the intake has not finished with yet (its trial may be running) is left for the
  next round, so a condition never reports an older generation's verdict;
* ``CRDExists``: discovery of the root GVK (the cache's ``Discovery``; CRD changes wake the
  controller, so installing a CRD later flips the condition);
* workloads: the materialized views of the entry in force for that Karta, and the time one
  of them was last resolved (from the service's change feed).

Only the replica holding the Lease writes (``is_leader``); the others compute nothing and
only read. Writes go through ``workload_map.kube.kartastatus.write_status`` when
:func:`~workload_map.kube.kartastatus.needs_write` says the status changed. Failures are
logged and retried next round; a Karta that breaks the computation is skipped, never the
others (bounded per round by the number of Kartas).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import socket
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from workload_map.definitions.load import check_definition
from workload_map.gvk import GVK, KARTA_GVK
from workload_map.kube.errors import KubeApiError
from workload_map.kube.kartastatus import (KartaFindings, desired_status, needs_write, now_rfc3339,
                                           problem_lines, root_gvk, write_status)
from workload_map.kube.leases import LeaderElector
from workload_map.kube.reader import Reader
from workload_map.logs import logger
from workload_map.registration.following import DefinitionIntake

log = logger(__name__)

STATUS_INTERVAL_S = 2.0
"""Seconds between rounds when nothing wakes the controller."""
RESOLVED_REFRESH_S = 60.0
"""``lastResolvedTime`` alone is rewritten at most this often (seconds)."""
SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
LEASE_NAME = "workload-map-server-karta-status"
"""Default name of the Lease whose holder writes Karta status."""


class KartaStatusController:
    """Computes and writes Karta status while ``is_leader()`` is true.

    Args:
        intake: the cluster's registrar (registry in force and skipped definitions).
        service: the cluster's ``WorkloadService`` (``store`` and ``feed``).
        reader: the informer cache holding the Karta objects.
        served: ``await served(gvk)`` -> the API server serves ``gvk`` (raises ``KubeApiError``).
        write: ``await write(name, status)`` -> HTTP status of the status patch.
        is_leader: True while this replica holds the Lease.
        interval: seconds between rounds.
    """

    def __init__(self, intake: DefinitionIntake, service: Any, reader: Reader, *,
                 served: Callable[[GVK], Awaitable[bool]], write: Callable[[str, Mapping[str, Any]], Awaitable[int]],
                 is_leader: Callable[[], bool], interval: float = STATUS_INTERVAL_S) -> None:
        self.intake, self.service, self.reader = intake, service, reader
        self._served, self._write, self._is_leader = served, write, is_leader
        self.interval = interval
        self.resolved_at: dict[str, str] = {}
        self.writes = 0
        #: The ``LeaderElector`` deciding ``is_leader`` (set by :func:`karta_status`).
        self.elector: Any = None
        self._wake = asyncio.Event()
        self._static: dict[tuple[str, int, str], tuple[tuple[str, ...], Any]] = {}

    def is_leader(self) -> bool:
        """True while this replica holds the Lease (it alone writes)."""
        return self._is_leader()

    def wake(self, *_: object) -> None:
        """Start the next round now (a registry or CRD listener)."""
        self._wake.set()

    async def run(self) -> None:
        """Rounds until cancelled; also follows the change feed for ``lastResolvedTime``."""
        feed = asyncio.create_task(self._follow_feed(), name="wmap-karta-status-feed")
        try:
            while True:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.interval):  # not wait_for: see pyproject's banned-api
                        await self._wake.wait()
                self._wake.clear()
                if self._is_leader():
                    await self.round()
        finally:
            feed.cancel()
            await asyncio.gather(feed, return_exceptions=True)

    async def _follow_feed(self) -> None:
        async with self.service.feed.subscribe(maxsize=4096) as changes:
            async for change in changes:
                view = change.view or change.previous
                if view is not None and view.origin == "cluster":
                    self.resolved_at[view.definition] = now_rfc3339()

    async def round(self) -> int:
        """One pass over every Karta; returns how many statuses were written."""
        counts = Counter((r.entry.origin, r.entry.key) for r in self.service.store.snapshot().records)
        written = 0
        for obj in list(self.reader.list(KARTA_GVK)):
            name = str((obj.get("metadata") or {}).get("name") or "")
            try:
                findings = await self.findings(obj, counts)
            except Exception:  # noqa: BLE001 - one broken Karta must not stop the others
                log.exception("cannot work out the status of Karta %s", name)
                continue
            if findings is None:
                continue
            current = obj.get("status") if isinstance(obj.get("status"), Mapping) else None
            status = desired_status(findings, current, now_rfc3339())
            if not needs_write(current, status, refresh_s=RESOLVED_REFRESH_S):
                continue
            code = await self._write(name, status)
            if code == 200:
                written += 1
            elif code != 404:  # 404: deleted meanwhile
                log.warning("cannot write the status of Karta %s: HTTP %s", name, code)
        self.writes += written
        return written

    async def findings(self, obj: Mapping[str, Any], counts: Mapping[tuple[str, str], int]) -> KartaFindings | None:
        """What is known of ``obj`` now; None while the intake has not judged this version yet."""
        meta = obj.get("metadata") or {}
        name, generation = str(meta.get("name") or ""), int(meta.get("generation") or 0)
        problems, definition = self._check(name, generation, obj)
        if not problems:
            skipped = self.intake.skipped.get(("cluster", name))
            entry = next((e for e in self.intake.registry.registered("cluster") if e.key == name), None)
            if skipped is not None:
                problems = problem_lines(skipped.problems)
            elif entry is None or entry.definition != definition:
                return None
        root = definition.gvk if definition is not None else root_gvk(obj)
        found: bool | None = None
        if root is not None:
            try:
                found = await self._served(root)
            except KubeApiError as exc:
                log.warning("discovery of %s for Karta %s failed: %s", root, name, exc)
        workloads = counts.get(("cluster", name), 0) if not problems else 0
        resolved = self.resolved_at.get(definition.name) if definition is not None else None
        return KartaFindings(generation, problems, root, found, workloads, resolved)

    def _check(self, name: str, generation: int, obj: Mapping[str, Any]) -> tuple[tuple[str, ...], Any]:
        """Static validation of this generation, remembered (one entry per Karta name)."""
        version = "" if generation else str((obj.get("metadata") or {}).get("resourceVersion") or "")
        key = (name, generation, version)
        if key not in self._static:
            for old in [k for k in self._static if k[0] == name]:
                del self._static[old]
            definition, problems = check_definition(dict(obj))
            self._static[key] = (problem_lines(problems), definition)
        return self._static[key]


def lease_namespace(configured: str = "") -> str:
    """The namespace of the status writer's Lease.

    ``configured`` (``--lease-namespace``), else ``$POD_NAMESPACE`` (the chart sets it from
    the downward API), else the in-cluster service account's namespace, else ``default``.
    """
    if configured:
        return configured
    env = os.environ.get("POD_NAMESPACE", "")
    if env:
        return env
    try:
        return SERVICE_ACCOUNT_NAMESPACE.read_text(encoding="utf-8").strip() or "default"
    except OSError:
        return "default"


def replica_identity() -> str:
    """This replica's Lease holder identity: host (pod) name plus a random suffix."""
    return f"{socket.gethostname()}-{secrets.token_hex(4)}"


def karta_status(intake: DefinitionIntake, service: Any, cache: Any, client: Any,
                 background: list[Callable[[], Awaitable[None]]], *, namespace: str = "",
                 lease_name: str = LEASE_NAME) -> KartaStatusController:
    """The status controller and its leader elector over one cluster's informer cache and client.

    ``elector.run`` and ``controller.run`` are appended to ``background`` (the lifespan runs
    them as tasks; cancelling the elector releases the Lease). The controller wakes on
    leadership, definition and CRD changes. ``namespace``: the Lease's (see :func:`lease_namespace`).
    """
    async def served(gvk: GVK) -> bool:
        return await cache.discovery.resolve(gvk) is not None

    async def write(name: str, status: Mapping[str, Any]) -> int:
        return await write_status(client, name, status)

    holder: list[LeaderElector] = []
    controller = KartaStatusController(intake, service, cache, served=served, write=write,
                                       is_leader=lambda: bool(holder) and holder[0].is_leader)
    elector = LeaderElector(client, lease_namespace(namespace), lease_name, replica_identity(),
                            on_change=controller.wake)
    holder.append(elector)
    controller.elector = elector
    intake.registry.add_listener(controller.wake)
    cache.discovery.crds.add_listener(controller.wake)
    background += [elector.run, controller.run]
    return controller
