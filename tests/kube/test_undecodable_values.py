"""Well-formed values the decoders cannot build: nested about 1,000 levels deep, integers of
more than 4,300 digits (``sys.get_int_max_str_digits()``).

Before: ``RecursionError`` / ``ValueError`` escaped the readers. ``wmap describe -f`` lost the
whole file with a traceback, and ``wmap serve --snapshot`` stayed "startup in progress" for
good without a line in its log. Now the lenient reader (``describe -f``) reports that one
document or item and keeps the rest; the strict one (``serve --snapshot``) fails the start
with the reason and position.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from workload_map.kube.documents import read_documents
from workload_map.kube.snapshot import SnapshotError, load_objects

DEEP = "[" * 1200 + "]" * 1200  # deeper than the recursion limit (1,000) allows to decode
DIGITS = "9" * 5000  # more than int() converts from text (4,300)


def config_map(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "team"}}


def raw_item(name: str, data: str) -> str:
    return json.dumps(config_map(name))[:-1] + f', "data": {{"x": {data}}}}}'


def names(objects: list[dict[str, Any]]) -> list[str]:
    return [obj["metadata"]["name"] for obj in objects]


def test_the_limits_are_those_of_this_interpreter() -> None:
    assert sys.getrecursionlimit() < 1200 and sys.get_int_max_str_digits() < 5000


def test_a_list_dump_keeps_the_items_around_the_undecodable_ones(tmp_path: Path) -> None:
    path = tmp_path / "dump.json"
    items = [json.dumps(config_map("first")), raw_item("deep", DEEP), raw_item("long", DIGITS),
             json.dumps(config_map("last"))]
    path.write_text('{"apiVersion": "v1", "items": [' + ", ".join(items) + '], "kind": "List"}')
    objects, problems = read_documents(path)
    assert names(objects) == ["first", "last"]
    assert len(problems) == 2
    # the deep item starts after the list head (31 characters) and the first item and ", "
    start = 31 + len(items[0]) + 2
    assert problems[0] == (f"{path} (document 1): items[1]: the value at line 1 column {start + 1} (char {start}) "
                           "is not decoded: nested too deeply (the decoders stop near the interpreter's "
                           "recursion limit, 1,000 levels)")
    assert problems[1].startswith(f"{path} (document 1): items[2]: the value at line 1 column")
    assert problems[1].endswith("is not decoded: Exceeds the limit (4300 digits) for integer string conversion: "
                                "value has 5000 digits")
    # the strict reader (serve --snapshot) stops at the first, naming it
    with pytest.raises(SnapshotError, match=r"items\[1\]: the value at line 1 column \d+ \(char \d+\) is not decoded: "
                                            "nested too deeply"):
        load_objects(path)


def test_concatenated_values_and_array_elements(tmp_path: Path) -> None:
    # a top-level object is decoded member by member (its `data` is named); an array element whole
    path = tmp_path / "values.json"
    path.write_text(raw_item("deep", DEEP) + "\n" + json.dumps(config_map("second")) + "\n["
                    + raw_item("long", DIGITS) + ", " + json.dumps(config_map("fourth")) + "]\n")
    objects, problems = read_documents(path, shown="<stdin>")
    assert names(objects) == ["second", "fourth"]
    assert [p.split(": the value")[0] for p in problems] == ["<stdin> (document 1): data", "<stdin> (document 3): element 0"]


def test_an_undecodable_member_refuses_its_object_only(tmp_path: Path) -> None:
    # a top-level object is decoded member by member: its deep `spec` refuses the object
    path = tmp_path / "one.json"
    path.write_text(json.dumps(config_map("broken"))[:-1] + f', "spec": {DEEP}, "more": 1}}'
                    + json.dumps(config_map("kept")))
    objects, problems = read_documents(path)
    assert names(objects) == ["kept"] and len(problems) == 1
    assert problems[0].startswith(f"{path} (document 1): spec: the value at line 1 column")


def test_brackets_that_never_close_are_malformed_not_skipped(tmp_path: Path) -> None:
    path = tmp_path / "open.json"
    path.write_text(json.dumps(config_map("first")) + "\n" + "[" * 1200)
    objects, problems = read_documents(path)
    assert names(objects) == ["first"]
    assert len(problems) == 1 and "brackets do not close" in problems[0]


def test_brackets_inside_strings_do_not_count_when_a_deep_value_is_skipped(tmp_path: Path) -> None:
    tricky = '"]]]\\"]]"'  # a string of closing brackets and an escaped quote inside the deep value
    path = tmp_path / "strings.json"
    path.write_text("[" + raw_item("deep", "[" * 1100 + tricky + "]" * 1100) + ", "
                    + json.dumps(config_map("after")) + "]")
    objects, problems = read_documents(path)
    assert names(objects) == ["after"] and len(problems) == 1


def test_yaml_and_json_documents_of_a_stream(tmp_path: Path) -> None:
    path = tmp_path / "stream.yaml"
    path.write_text("---\n" + raw_item("deep", DEEP) + "\n---\n" + raw_item("long", DIGITS)
                    + f"\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: yaml-long}}\ndata: {{a: {DIGITS}}}\n"
                    "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: kept}\n")
    objects, problems = read_documents(path)
    assert names(objects) == ["kept"]
    assert problems[0] == (f"{path} (document 1, line 1): not decoded: nested too deeply (the decoders stop near "
                           "the interpreter's recursion limit, 1,000 levels)")
    assert problems[1].startswith(f"{path} (document 2, line 3): not decoded: Exceeds the limit (4300 digits)")
    assert problems[2].startswith(f"{path} (document 3, line 5): an integer that cannot be read: Exceeds the limit")
    # a YAML integer in a strict read: a YAML error naming its line, not a bare ValueError
    strict = tmp_path / "strict.yaml"
    strict.write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c}}\ndata: {{a: {DIGITS}}}\n")
    with pytest.raises(SnapshotError, match="an integer that cannot be read"):
        load_objects(strict)
