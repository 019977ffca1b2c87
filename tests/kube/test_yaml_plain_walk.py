"""The direct walk of ``JSONLoader`` (``workload_map.kube.yamljson._plain_value``) builds what the safe
constructor builds, or leaves the document to it: generated documents, both ways."""

from __future__ import annotations

import math
from typing import Any

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from workload_map.kube import yamljson
from workload_map.kube.yamljson import JSONLoader


class SafeWayLoader(JSONLoader):
    """``JSONLoader`` with the direct walk turned off: every document the safe constructor's way."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._plain = False


def both(text: str) -> tuple[Any, Any]:
    """``(direct walk, safe way)`` of every document of ``text``; an error is ``("error", its text)``."""
    out = []
    for loader in (JSONLoader, SafeWayLoader):
        try:
            out.append(list(yaml.load_all(text, Loader=loader)))
        except (yaml.YAMLError, RecursionError, ValueError) as exc:
            out.append(("error", type(exc).__name__, str(exc)))
    return out[0], out[1]


def same(a: Any, b: Any) -> bool:
    """Equal, and of the same types all the way down (``1 == 1.0 == True`` must not pass); NaN equals NaN."""
    pending = [(a, b)]  # a stack, not recursion: documents nest hundreds deep
    while pending:
        x, y = pending.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, dict):
            if list(x) != list(y):
                return False
            pending.extend((x[k], y[k]) for k in x)
        elif isinstance(x, (list, tuple)):
            if len(x) != len(y):
                return False
            pending.extend(zip(x, y))
        elif isinstance(x, float) and math.isnan(x):
            if not math.isnan(y):
                return False
        elif x != y:
            return False
    return True


# plain scalars YAML 1.1 reads as something else than a string, strings that look like them,
# keys that collide once converted, and what the walk must leave to the safe constructor
TRICKY = ["yes", "No", "on", "OFF", "~", "null", "", "1e3", "1_000", "0x1F", "0o17", "017", "0b101", "1:30",
          "-.inf", ".NaN", "2024-01-01", "2024-01-01T00:00:00Z", "2024-01-01 10:00:05", "<<", "=", "true",
          "3.0", "-0", "+12", "a: b", "- x", "#c", "x #c", "'q'", '"d"', "é", "\u2028", "\ud800", "\U0001f600",
          "!!str 5", "!!binary aGk=", "!!int 7", "!!float 1", "!!set {a, b}", "!foo bar", "? k"]
scalars = st.one_of(st.sampled_from(TRICKY), st.text(max_size=8), st.integers(-10**20, 10**20),
                    st.floats(allow_nan=True), st.booleans(), st.none())
keys = st.one_of(st.sampled_from(TRICKY), st.text(max_size=6), st.integers(-3, 3), st.booleans(), st.none(),
                 st.floats(-2, 2))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
                      max_leaves=20)


@settings(max_examples=400, deadline=None)
@given(values, st.booleans(), st.sampled_from([None, "'", '"']))
def test_a_dumped_document_is_read_the_same_both_ways(value: Any, flow: bool, style: str | None) -> None:
    text = yaml.safe_dump(value, default_flow_style=flow, default_style=style, allow_unicode=True)
    direct, safe_way = both(text)
    assert same(direct, safe_way), text


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(TRICKY + ["k", "5", "1", "true"]), st.sampled_from(TRICKY)),
                min_size=1, max_size=6), st.booleans())
def test_hand_written_maps_and_lists_are_read_the_same_both_ways(pairs: list[tuple[str, str]], as_list: bool) -> None:
    if as_list:
        text = "\n".join(f"- {v}" for _, v in pairs) + "\n"
    else:
        text = "\n".join(f"{k}: {v}" for k, v in pairs) + "\n"
    direct, safe_way = both(text)
    assert same(direct, safe_way), text


@pytest.mark.parametrize("text", [
    "true: a\n1: b\n",  # one key to the safe constructor's dict (True == 1): "true": "b"
    "5: x\n'5': y\n",  # an int key and a string key that convert to the same JSON key
    "a: 1\na: 2\nb: 3\n",  # a duplicate: the last value, in the first one's place
    "<<: {a: 1}\nb: 2\n",  # a merge key without an alias
    "k: !!set {x, y}\nl: !!omap [{a: 1}]\n",
    "k: !!binary aGVsbG8=\n",
    "k: !!binary 'not base64 !'\n",  # an error: the safe constructor's own words
    "k: 1" + "0" * 5000 + "\n",  # more digits than int() converts: refused naming the line
    "k: !custom 3\n",
    "[" * 400 + "]" * 400 + "\n",
    "n: \"\\ud800 lone\"\n",  # libyaml refuses a lone surrogate escape: the same error both ways
])
def test_documents_the_walk_leaves_or_takes_are_read_the_same_both_ways(text: str) -> None:
    direct, safe_way = both(text)
    assert same(direct, safe_way)


def test_a_lone_surrogate_from_the_pure_python_parser_is_u_fffd_in_the_walk_too() -> None:
    # PyYAML's own parser (the loader's base without libyaml) lets a lone surrogate escape through
    node = yaml.compose('n: "\\ud800 x"\n"\\udc00": v\n', Loader=yaml.SafeLoader)
    loader = JSONLoader("")
    assert yamljson._plain_value(loader, node, loader.yaml_constructors) == {"n": "\ufffd x", "\ufffd": "v"}


def test_the_walk_builds_a_plain_manifest_and_the_safe_constructor_is_not_asked(monkeypatch: pytest.MonkeyPatch) \
        -> None:
    asked: list[str] = []
    original = yaml.constructor.BaseConstructor.construct_object

    def counting(self: Any, node: Any, deep: bool = False) -> Any:
        asked.append(node.tag)
        return original(self, node, deep)

    monkeypatch.setattr(yaml.constructor.BaseConstructor, "construct_object", counting)
    text = "kind: Pod\nmetadata: {name: p, labels: {app: x}}\nspec:\n  replicas: 3\n  ok: true\n  t: 2024-01-01\n"
    assert yaml.load(text, Loader=JSONLoader) == {"kind": "Pod", "metadata": {"name": "p", "labels": {"app": "x"}},
                                                   "spec": {"replicas": 3, "ok": True, "t": "2024-01-01"}}
    assert asked == []  # the walk built it
    yaml.load(text + "anchored: &a {x: 1}\nagain: *a\n", Loader=JSONLoader)
    assert asked  # an anchor: the safe constructor's way, aliases counted (tests/kube/test_yamljson.py)
    assert yamljson._PLAIN_SCALARS >= {"tag:yaml.org,2002:int", "tag:yaml.org,2002:timestamp"}


def test_a_snapshot_file_is_read_whole_when_small_and_streamed_when_big(tmp_path: Any,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from workload_map.kube.snapshot import load_objects

    path = tmp_path / "two.yaml"
    path.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: n}\n---\n"
                    "apiVersion: v1\nkind: Pod\nmetadata: {name: b, namespace: n}\nspec: {x: 2024-01-01}\n",
                    encoding="utf-8")
    with path.open(encoding="utf-8") as handle:
        assert isinstance(yamljson.whole_or_stream(handle), str)
    small = load_objects(path)
    monkeypatch.setattr(yamljson, "WHOLE_TEXT_BYTES", 10)
    with path.open(encoding="utf-8") as handle:
        assert yamljson.whole_or_stream(handle) is handle  # bigger than the bound: parsed as it is read
    streamed = load_objects(path)
    assert [o["metadata"]["name"] for o in small] == ["a", "b"] and small[1]["spec"] == {"x": "2024-01-01"}
    assert small == streamed
