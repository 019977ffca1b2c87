"""Outage recovery: probe the API server while a reflector fails, wake the reflectors once it answers.

Woken, a failing reflector retries at once instead of waiting out its backoff.
``Recovery.run`` is one task of the informer cache (``InformerCache.start``). The probe is
``GET /readyz`` (:func:`readyz_probe`); what counts as an answer is
``KubeApiError.answered``. A kind failing on a healthy server (a broken conversion webhook,
say) is not woken: the server never failed a probe, so its backoff holds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from workload_map.kube.api import KubeApi
from workload_map.kube.errors import KubeApiError
from workload_map.logs import logger

if TYPE_CHECKING:  # the reflector module imports the Kubernetes client
    from workload_map.kube.reflector import Reflector

log = logger(__name__)

Probe = Callable[[], Awaitable[bool]]
"""True when the API server answers (is ready) again."""


class Recovery:
    """Probes the API server every ``interval`` seconds while ``failing()`` is not empty.

    Args:
        probe: the readiness check.
        interval: seconds between probes.
        failing: the reflectors failing now (``down_since`` set).

    Attributes:
        probes: probes sent.
        wakeups: times the failing reflectors were woken.
    """

    def __init__(self, probe: Probe, interval: float, failing: Callable[[], list[Reflector]]) -> None:
        self._probe, self._interval, self._failing = probe, interval, failing
        self.probes = self.wakeups = 0

    async def run(self) -> None:
        """Until cancelled: once the server answers after having failed a probe, wake every failing reflector."""
        server_down = False
        while True:
            await asyncio.sleep(self._interval)
            failing = self._failing()
            if not failing:
                server_down = False
                continue
            self.probes += 1
            if not await self._probe():
                server_down = True
            elif server_down:
                server_down = False
                self.wakeups += 1
                log.info("API server answers again; reconnecting %d reflector(s)", len(failing))
                for reflector in failing:
                    reflector.wake()


def readyz_probe(api: KubeApi) -> Probe:
    """``GET /readyz``: any answer below 500 other than 429 counts.

    Its body is text, so a 200 surfaces as an ``InvalidJSON`` error with status 200;
    401/403 still mean "up".
    """

    async def probe() -> bool:
        try:
            await api.get_json("/readyz")
        except KubeApiError as exc:
            return exc.answered
        return True

    return probe
