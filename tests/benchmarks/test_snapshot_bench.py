"""``python -m benchmarks.snapshot`` pieces on a tiny cluster: the dump it writes is a
``kubectl get -o json`` List that the snapshot reader streams back object for object."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.generator import generate
from benchmarks.snapshot import load_in_process, write_dump


def test_dump_is_a_kubectl_list_and_loads_back_whole(tmp_path: Path) -> None:
    dump = tmp_path / "dump.json"
    written = write_dump(12, dump, seed=3)
    expected = sum(1 for _ in generate(12, seed=3).iter_objects())
    assert written["objects"] == expected and written["bytes"] == dump.stat().st_size
    doc = json.loads(dump.read_text())  # small enough to decode whole here
    assert (doc["apiVersion"], doc["kind"], len(doc["items"])) == ("v1", "List", expected)
    assert dump.read_text().startswith('{\n    "apiVersion": "v1",\n    "items": [\n        {')  # kubectl's indent
    loaded = load_in_process(dump)
    # every generated object is stored once; every one of the 12 workloads is listed
    assert (loaded["objects"], loaded["workloads"]) == (expected, 12)
    assert loaded["peak_rss_bytes"] > 0 and loaded["load_seconds"] >= 0


def test_fastjson_parse_reports_the_load_and_its_compaction(tmp_path: Path) -> None:
    from benchmarks.fastjson import parse

    from workload_map.kube import trim

    dump = tmp_path / "dump.json"
    written = write_dump(6, dump, seed=5)
    compact_before = trim.compact
    doc = parse(dump)
    assert doc["objects"] == doc["stored"] == written["objects"] and doc["same_count"]
    assert doc["load_cpu_s"] >= doc["compaction_cpu_s"] >= 0
    assert trim.compact is compact_before  # the measuring wrapper is taken off again
