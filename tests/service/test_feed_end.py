"""The change feed's end (``ChangeFeed.end``, called as the server stops): every subscriber ends at once."""

from __future__ import annotations

import asyncio

import pytest

from workload_map.errors import ServerStopping
from workload_map.materialization.feed import ChangeFeed, ViewChange


def _change(uid: str, namespace: str = "ns") -> ViewChange:
    return ViewChange(type="removed", uid=uid, namespace=namespace, kind="JobSet", name=uid, previous=None, view=None)


async def test_a_waiting_subscriber_is_woken_and_changes_queued_before_the_end_come_first() -> None:
    feed = ChangeFeed()
    waiting, queued = feed.subscribe(namespace="ns"), feed.subscribe()
    getter = asyncio.ensure_future(waiting.get())
    await asyncio.sleep(0)
    feed.publish(_change("a"))
    feed.publish(_change("b", namespace="other"))
    assert (await getter).uid == "a"
    getter = asyncio.ensure_future(waiting.get())
    await asyncio.sleep(0)
    feed.end()
    with pytest.raises(ServerStopping, match="the server is stopping"):
        await getter
    with pytest.raises(ServerStopping):  # and every later call
        await waiting.get()
    assert [c.uid async for c in queued] == ["a", "b"]  # what came before the end, then the iteration stops


async def test_a_subscriber_after_the_end_is_ended_at_once_and_a_full_queue_still_takes_the_end() -> None:
    feed = ChangeFeed(queue_size=2)
    full = feed.subscribe()
    for uid in ("a", "b"):
        feed.publish(_change(uid))
    feed.end()
    feed.end()  # idempotent: one end queued
    assert [c.uid async for c in full] == ["b"] and full.dropped == 1  # the oldest dropped for the end
    late = feed.subscribe(namespace="ns")
    with pytest.raises(ServerStopping):
        await asyncio.wait_for(late.get(), 1)
    assert late.queue.qsize() == 1  # only the end, kept for the next call


async def test_a_change_published_after_the_end_cannot_push_the_end_out_of_a_full_queue() -> None:
    # the materializer still publishes while the stop drains: queued behind the end, a full
    # queue dropped its oldest entry, the end itself, and the subscriber waited on
    feed = ChangeFeed(queue_size=2)
    subscriber = feed.subscribe()
    feed.end()
    for uid in ("a", "b", "c"):
        feed.publish(_change(uid))
    assert subscriber.queue.qsize() == 1 and subscriber.dropped == 0
    with pytest.raises(ServerStopping):
        await asyncio.wait_for(subscriber.get(), 1)
