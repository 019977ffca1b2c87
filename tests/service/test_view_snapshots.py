"""ViewStore snapshots read from another thread while the store changes are consistent.

GraphQL queries read the views in the query thread while the event loop writes them
(workload_map.api.offload); here a writer thread plays the loop.
"""

from __future__ import annotations

import random
import threading
import time

from workload_map.materialization.views import ViewStore, sort_key
from tests.service.test_aggregates import ENTRY, _view

SIZE = 3000


def test_snapshots_and_summaries_are_whole_generations_while_a_thread_writes() -> None:
    rng = random.Random(7)
    store = ViewStore()
    for i in range(SIZE):
        store.put(ENTRY, _view(rng, f"u{i}", f"w{i:05d}", f"ns{i % 7}"))
    stop = threading.Event()

    def writer() -> None:
        """Replace random views under new names (the count stays SIZE), at most 50,000 times."""
        wrng = random.Random(8)
        for step in range(50_000):
            if stop.is_set():
                return
            i = wrng.randrange(SIZE)
            store.put(ENTRY, _view(wrng, f"u{i}", f"w{wrng.randrange(100_000):05d}-{step}", f"ns{i % 7}"))

    thread = threading.Thread(target=writer)
    thread.start()
    generations: set[int] = set()
    try:
        deadline = time.monotonic() + 20
        while len(generations) < 200 and time.monotonic() < deadline and thread.is_alive():
            snapshot = store.snapshot()
            generations.add(snapshot.generation)
            keys = [sort_key(r.view) for r in snapshot.records]
            # a put replaces one view: every generation holds exactly SIZE views, in list order
            assert len(keys) == SIZE and keys == sorted(keys)
            assert len({k[3] for k in keys}) == SIZE
            generation, buckets = store.summary("NAMESPACE")
            assert generation >= snapshot.generation
            assert sum(b.workloads for b in buckets) == SIZE
    finally:
        stop.set()
        thread.join(30)
    assert len(generations) >= 20  # the writer really ran between the reads


def test_re_resolved_views_keep_their_place_and_renamed_ones_move() -> None:
    """A put under a stored key with the same sort key (a re-resolution) leaves the list order
    as it is; one whose name or kind (random in ``_view``) changed moves; both leave every key
    once, in sort order."""
    rng = random.Random(11)
    store = ViewStore()
    names = {i: f"w{rng.randrange(10_000):05d}" for i in range(500)}
    for i, name in names.items():
        store.put(ENTRY, _view(rng, f"u{i}", name, f"ns{i % 5}"))
    for step in range(3000):
        i = rng.randrange(500)
        if step % 3 == 0:  # renamed: a new sort key under the same key
            names[i] = f"w{rng.randrange(10_000):05d}"
        store.put(ENTRY, _view(rng, f"u{i}", names[i], f"ns{i % 5}"))
    records = store.snapshot().records
    keys = [sort_key(r.view) for r in records]
    assert keys == sorted(keys) and len(keys) == 500
    assert sorted(r.view.uid for r in records) == sorted(f"u{i}" for i in range(500))
    assert {r.view.uid: (r.view.namespace, r.view.name) for r in records} == {
        f"u{i}": (f"ns{i % 5}", names[i]) for i in range(500)}  # each key holds its last put
