"""``ChangeEvent.old``: a MODIFIED event carries the object as cached before the change."""

from __future__ import annotations

from typing import Any

from workload_map.gvk import GVK
from workload_map.kube.reader import ChangeEvent
from workload_map.kube.snapshot import SnapshotReader

DEMO = GVK("example.com", "v1", "Demo")


def _demo(name: str, rv: str, phase: str) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Demo", "status": {"p": phase},
            "metadata": {"name": name, "namespace": "n", "uid": f"u-{name}", "resourceVersion": rv}}


def test_modified_events_carry_the_previous_object_from_an_upsert_and_a_relist() -> None:
    reader = SnapshotReader([_demo("a", "1", "up"), _demo("b", "1", "up")])
    events: list[ChangeEvent] = []
    reader.add_listener(events.append)
    reader.add(_demo("a", "2", "done"))  # one watch event: MODIFIED with what rv 1 said
    reader.replace(DEMO, [_demo("a", "3", "wait"), _demo("c", "1", "up")], namespace="n")  # a relist
    seen = [(e.type, e.obj["metadata"]["name"], e.old["status"]["p"] if e.old is not None else None) for e in events]
    # a: up -> done (upsert), done -> wait (relist); c is new (no old); b vanished from the list (DELETED)
    assert seen == [("MODIFIED", "a", "up"), ("MODIFIED", "a", "done"), ("ADDED", "c", None), ("DELETED", "b", None)]


def test_queued_events_do_not_keep_the_previous_object() -> None:
    reader = SnapshotReader([_demo("a", "1", "up")])
    queue = reader.subscribe()
    olds: list[Any] = []
    reader.add_listener(lambda e: olds.append(e.old))
    reader.add(_demo("a", "2", "done"))
    queued = queue.get_nowait()
    # the listener saw rv 1's object; the queued event (read later, maybe much later) holds none
    assert [o["metadata"]["resourceVersion"] for o in olds] == ["1"]
    assert queued.type == "MODIFIED" and queued.old is None and queued.obj["status"] == {"p": "done"}
