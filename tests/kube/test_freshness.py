"""Staleness, quick recovery and honest logs of the informer cache (fake API server, no cluster).

Timing is controlled by making the reflector backoff long (``backoff_base`` 5 s, so a first
retry delay lies in [5, 6) s with jitter 0.2): anything that recovers within the 2 s the
tests wait proves the probe woke the reflector or the 429 path skipped the backoff.
"""

from __future__ import annotations

import logging
import random
from contextlib import asynccontextmanager
from typing import Any

import pytest

from workload_map.gvk import GVK
from workload_map.kube.cache import CacheOptions, InformerCache
from workload_map.kube.discovery import Discovery
from workload_map.kube.errors import NETWORK, KubeApiError
from workload_map.kube.freshness import freshness
from workload_map.kube.graph import GraphSink, ObjectGraph
from workload_map.kube.reader import InformerStatus
from workload_map.kube.reflector import Reflector, ReflectorOptions

from .fakes import CORE_V1, FakeApiServer, FakeJson, ScriptedListWatch, make_obj, wait_for

POD = GVK("", "v1", "Pod")
SLOW_BACKOFF = ReflectorOptions(inactivity_timeout=5.0, backoff_base=5.0, backoff_cap=5.0, min_watch_seconds=0.0,
                                throttle_delay=0.05, resume_grace=0.05)

pytestmark = pytest.mark.timeout(30)


class Flaky:
    """A ``ListWatch`` over a ``FakeApiServer`` that refuses every call while ``down``."""

    def __init__(self, server: FakeApiServer) -> None:
        self.server, self.down, self.calls_while_down = server, False, 0

    def _check(self) -> None:
        if self.down:
            self.calls_while_down += 1
            raise KubeApiError(NETWORK, "ClientConnectorError", "connection refused")

    async def list_page(self, *, limit: int, continue_token: str | None) -> dict[str, Any]:
        self._check()
        return self.server.list_page(None, limit, continue_token)

    @asynccontextmanager
    async def _watch(self, resource_version: str, timeout_seconds: int) -> Any:
        self._check()
        async with self.server.watch(None, resource_version, timeout_seconds) as events:
            yield events

    def watch(self, *, resource_version: str, timeout_seconds: int, read_timeout: float) -> Any:
        return self._watch(resource_version, timeout_seconds)


class Outage:
    """One pod collection behind ``Flaky`` and a probe that answers while the server is up."""

    def __init__(self) -> None:
        self.server = FakeApiServer(POD)
        self.flaky = Flaky(self.server)
        self.probes = 0

    async def probe(self) -> bool:
        self.probes += 1
        return not self.flaky.down

    def cache(self, stale_after: float = 0.2) -> InformerCache:
        options = CacheOptions(reflector=SLOW_BACKOFF, stale_after=stale_after, probe_interval=0.02,
                               watch_crds=False)
        return InformerCache(discovery=Discovery(FakeJson({"/api/v1": CORE_V1})), sources=lambda i, n: self.flaky,
                             options=options, probe=self.probe)

    def go_down(self) -> None:
        self.flaky.down = True
        self.server.disconnect()  # open watches end, as when kube-apiserver stops


async def test_outage_is_flagged_after_the_threshold_and_cleared_on_recovery() -> None:
    outage = Outage()
    outage.server.create(make_obj(POD, "a"))
    cache = outage.cache(stale_after=0.2)
    cache.watch(POD)
    await cache.start()
    try:
        assert await cache.wait_synced(5)
        assert not cache.state(POD).stale and not freshness(cache.states()).stale
        outage.go_down()
        assert await wait_for(lambda: cache.state(POD).down_since is not None)
        assert not cache.state(POD).stale, "down, but not yet for the 0.2 s threshold"
        assert await wait_for(lambda: cache.state(POD).stale, timeout=2)
        summary = freshness(cache.states())
        assert summary.stale and summary.stale_kinds == ("core/v1/Pod",)
        assert "connection refused" in summary.error and summary.since is not None
        assert cache.get(POD, "ns", "a") is not None, "stale objects are still served"
        outage.flaky.down = False
        # The retry delay is >= 5 s; the probe (every 0.02 s) wakes the reflector at once.
        assert await wait_for(lambda: not cache.state(POD).stale and cache.state(POD).state == "synced", timeout=2)
        assert cache.wakeups >= 1 and freshness(cache.states()) == freshness({POD: cache.state(POD)})
        assert freshness(cache.states()).error == "" and freshness(cache.states()).since is None
        outage.server.create(make_obj(POD, "b"))
        assert await wait_for(lambda: cache.get(POD, "ns", "b") is not None, timeout=2)
    finally:
        await cache.stop()


async def test_without_a_probe_the_backoff_is_waited_out() -> None:
    """The control for the test above: no probe, so no reconnect within 1 s of recovery."""
    outage = Outage()
    options = CacheOptions(reflector=SLOW_BACKOFF, stale_after=0.2, watch_crds=False)
    cache = InformerCache(discovery=Discovery(FakeJson({"/api/v1": CORE_V1})), sources=lambda i, n: outage.flaky,
                          options=options)
    cache.watch(POD)
    await cache.start()
    try:
        assert await cache.wait_synced(5)
        outage.go_down()
        assert await wait_for(lambda: cache.state(POD).stale, timeout=2)
        outage.flaky.down = False
        assert not await wait_for(lambda: not cache.state(POD).stale, timeout=1.0)
    finally:
        await cache.stop()


async def test_throttled_list_retries_after_retry_after_without_backoff() -> None:
    page = {"metadata": {"resourceVersion": "7"}, "items": [make_obj(POD, "a")]}
    source = ScriptedListWatch([KubeApiError(429, "TooManyRequests", "storage is (re)initializing", retry_after=0.05),
                                KubeApiError(429, "TooManyRequests", "throttled"), page], [], hang_after=True)
    graph = ObjectGraph()
    reflector = Reflector(POD, source, GraphSink(graph, POD), options=SLOW_BACKOFF, rng=random.Random(1))
    reflector.start()
    try:
        # two retries of 0.05 s each (Retry-After, then throttle_delay), not 5 s backoffs
        assert await wait_for(lambda: reflector.has_synced, timeout=2)
        assert reflector.throttled == 2 and source.list_calls == 3 and reflector.state == "synced"
        assert reflector.down_since is None and reflector.last_success is not None
    finally:
        await reflector.stop()


async def test_recovery_logs_synced_again_after_the_410_relist(caplog: pytest.LogCaptureFixture) -> None:
    gone = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired",
                                        "message": "too old resource version"}}
    lists = [{"metadata": {"resourceVersion": "1"}, "items": []}, {"metadata": {"resourceVersion": "9"}, "items": []}]
    # watch 1 breaks (API server gone); watch 2 is accepted, then says 410; watch 3 idles
    source = ScriptedListWatch(lists, [[KubeApiError(NETWORK, "ServerDisconnectedError", "gone")], [gone]])
    options = ReflectorOptions(backoff_base=0.01, backoff_cap=0.02, min_watch_seconds=0.0, resume_grace=0.5)
    reflector = Reflector(POD, source, GraphSink(ObjectGraph(), POD), options=options, rng=random.Random(1))
    caplog.set_level(logging.INFO, logger="workload_map.kube.reflector")
    reflector.start()
    try:
        assert await wait_for(lambda: reflector.relists == 2 and reflector.state == "synced", timeout=3)
    finally:
        await reflector.stop()
    messages = [r.getMessage() for r in caplog.records]
    relisted = next(i for i, m in enumerate(messages) if m.startswith("relisted"))
    again = [i for i, m in enumerate(messages) if m.endswith("synced again")]
    assert again == [relisted + 1], messages
    assert reflector.last_rv == "9"


async def test_idle_watch_reopens_quietly(caplog: pytest.LogCaptureFixture) -> None:
    source = ScriptedListWatch([{"metadata": {"resourceVersion": "1"}, "items": []}], [])  # watches hang
    options = ReflectorOptions(inactivity_timeout=0.05, min_watch_seconds=0.0)
    reflector = Reflector(POD, source, GraphSink(ObjectGraph(), POD), options=options, rng=random.Random(1))
    caplog.set_level(logging.DEBUG, logger="workload_map.kube.reflector")
    reflector.start()
    try:
        assert await wait_for(lambda: reflector.inactivity_timeouts >= 3, timeout=3)
    finally:
        await reflector.stop()
    silent = [r for r in caplog.records if "silent" in r.getMessage()]
    assert len(silent) >= 3 and {r.levelno for r in silent} == {logging.DEBUG}
    assert reflector.state == "synced" and reflector.down_since is None


def test_freshness_summary_of_statuses() -> None:
    jobs = GVK("batch", "v1", "Job")
    fresh = InformerStatus(POD, "synced", has_synced=True)
    failing = InformerStatus(jobs, "error", has_synced=True, last_error="connection refused", down_since=100.0)
    stale = InformerStatus(jobs, "error", has_synced=True, last_error="connection refused", down_since=100.0,
                           stale=True)
    assert freshness({}).stale is False and freshness({}).synced is True
    assert freshness({POD: fresh}).to_dict() == {"synced": True, "stale": False, "since": None, "error": "",
                                                 "staleKinds": [], "lastSuccess": None}
    # failing but under the threshold: the error is reported, the data is not flagged
    assert freshness({POD: fresh, jobs: failing}).to_dict() == {
        "synced": True, "stale": False, "since": None, "error": "connection refused", "staleKinds": [],
        "lastSuccess": None}
    # 100.0 s after the epoch is 1970-01-01T00:01:40Z
    assert freshness({POD: fresh, jobs: stale}).to_dict() == {
        "synced": True, "stale": True, "since": "1970-01-01T00:01:40Z", "error": "connection refused",
        "staleKinds": ["batch/v1/Job"], "lastSuccess": None}
    assert freshness({POD: InformerStatus(POD, "syncing")}).synced is False
    # lastSuccess: the oldest contact (150 s after the epoch = 00:02:30Z); a missing kind does not count
    contacts = {POD: InformerStatus(POD, "synced", has_synced=True, last_success=200.0),
                jobs: InformerStatus(jobs, "synced", has_synced=True, last_success=150.0),
                GVK("x.io", "v1", "Gone"): InformerStatus(GVK("x.io", "v1", "Gone"), "crd_missing")}
    assert freshness(contacts).to_dict()["lastSuccess"] == "1970-01-01T00:02:30Z"


async def test_a_kind_failing_on_a_healthy_server_keeps_its_backoff() -> None:
    """The probe answers (the server is up) while one kind fails (say, a broken conversion
    webhook): no wake-up, so the 5 s backoff holds and the list is not retried within 1 s."""
    source = ScriptedListWatch([KubeApiError(500, "InternalError", "conversion webhook failed")] * 100, [])
    probes = []

    async def healthy() -> bool:
        probes.append(1)
        return True

    options = CacheOptions(reflector=SLOW_BACKOFF, stale_after=0.2, probe_interval=0.02, watch_crds=False)
    cache = InformerCache(discovery=Discovery(FakeJson({"/api/v1": CORE_V1})), sources=lambda i, n: source,
                          options=options, probe=healthy)
    cache.watch(POD)
    await cache.start()
    try:
        assert await wait_for(lambda: len(probes) >= 20, timeout=3)
        assert source.list_calls == 1 and cache.wakeups == 0
        assert cache.state(POD).stale and "conversion webhook failed" in cache.state(POD).last_error
    finally:
        await cache.stop()


async def test_the_kept_summary_equals_the_summary_of_the_statuses_throughout_an_outage() -> None:
    """``InformerCache.freshness()`` (kept between status changes) against ``freshness(states())``
    (summed up afresh) at every step: sync, an event (last success moves), down, stale, back,
    a missing kind watched and unwatched."""
    outage = Outage()
    outage.server.create(make_obj(POD, "a"))
    cache = outage.cache(stale_after=0.2)
    cache.watch(POD)
    await cache.start()
    mismatches: list[tuple[object, object]] = []
    samples = 0

    def same() -> bool:
        nonlocal samples
        samples += 1
        kept, full = cache.freshness(), freshness(cache.states())
        if kept != full:
            mismatches.append((kept, full))
        return kept == full

    try:
        assert await wait_for(lambda: same() and cache.freshness().synced, timeout=5)
        assert cache.freshness() is cache.freshness(), "kept while nothing changes"
        before = cache.freshness().last_success
        assert before is not None
        outage.server.create(make_obj(POD, "b"))
        assert await wait_for(lambda: same() and cache.get(POD, "ns", "b") is not None, timeout=2)
        assert cache.freshness().last_success > before, "an event moves the last success"
        missing = GVK("x.io", "v1", "Gone")
        cache.watch(missing)
        assert await wait_for(lambda: same() and cache.state(missing).state == "crd_missing", timeout=2)
        outage.go_down()
        assert await wait_for(lambda: same() and cache.state(POD).down_since is not None, timeout=2)
        assert same() and not cache.freshness().stale, "down, but not yet for the 0.2 s threshold"
        assert await wait_for(lambda: same() and cache.freshness().stale, timeout=2), "stale by the clock alone"
        assert cache.freshness().stale_kinds == ("core/v1/Pod",)
        outage.flaky.down = False
        assert await wait_for(lambda: same() and not cache.freshness().stale and cache.freshness().error == "",
                              timeout=2)
        cache.unwatch(missing)
        assert same() and missing not in cache.states()
    finally:
        await cache.stop()
    assert same()
    assert mismatches == [] and samples > 10


async def test_a_missing_kind_stays_missing_while_the_api_server_does_not_answer() -> None:
    """The recheck of a kind whose CRD is missing, during an outage, learns nothing: readiness and
    the summary keep it settled (before, it turned ``error`` and ``synced`` was false until the next
    recheck after the recovery, up to ``recheck_interval`` later)."""
    outage = Outage()
    outage.server.create(make_obj(POD, "a"))
    discovery_api = FakeJson({"/api/v1": CORE_V1})
    options = CacheOptions(reflector=SLOW_BACKOFF, stale_after=30.0, probe_interval=0.02, recheck_interval=0.05,
                           watch_crds=False)
    cache = InformerCache(discovery=Discovery(discovery_api, negative_ttl=0.01), sources=lambda i, n: outage.flaky,
                          options=options, probe=outage.probe)
    missing = GVK("x.io", "v1", "Gone")
    cache.watch(POD)
    cache.watch(missing)
    await cache.start()
    try:
        assert await wait_for(lambda: cache.is_synced() and cache.state(missing).state == "crd_missing", timeout=5)
        calls = len(discovery_api.calls)
        discovery_api.error = KubeApiError(NETWORK, "ClientConnectorError", "connection refused")
        outage.go_down()
        assert await wait_for(lambda: len(discovery_api.calls) >= calls + 3, timeout=5), "rechecks ran meanwhile"
        assert cache.state(missing).state == "crd_missing" and cache.is_synced()
        assert cache.freshness().synced and cache.freshness() == freshness(cache.states())
        discovery_api.error = KubeApiError(503, "ServiceUnavailable", "apiserver is shutting down")
        assert await wait_for(lambda: len(discovery_api.calls) >= calls + 6, timeout=5)
        assert cache.state(missing).state == "crd_missing" and cache.is_synced()
        discovery_api.error = None
        outage.flaky.down = False
        assert await wait_for(lambda: cache.state(POD).state == "synced" and cache.is_synced(), timeout=5)
        assert cache.state(missing).state == "crd_missing"
    finally:
        await cache.stop()
