"""The pure-Python fast path gives exactly jq's results, or defers to jq."""

from __future__ import annotations

import json

import jq as real_jq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workload_map.jq import Document, compile_program
from workload_map.jq.fastpath import parse_fast_path

SIMPLE = [".", ".a", ".a.b", '.a["k"]', '.a["x/y"].b', ".a[]", ".a[].b", ".a[0]", ".a[-1]", ".a // 1",
          '.a.b // "0"', ".a[].b // null", ".a | .b", ".a[] | .b", '."a"', ".a // .b", ".a // .b // 3"]
WIDER = [".a | .b // 1", ".a + 1", "[.a]", ".a?", '.a["x|y"]', "{a}", ".a[1:2]", ".a, .b", '"\\(.a)-x"',
         "if .a then 1 else 2 end", ".a as $x | $x", "def f($y): $y + 1; f(.a)", "[.a[]? | select(. != null)]"]
NOT_SIMPLE = [".. ", "$x", "reduce .[] as $x (0; . + $x)", ".a | sub(\"x\"; \"y\")", ".a % 2", "-(.a)", "1.5",
              "def f: f; f", ".a | @base64", "try .a catch 1", ".a |= 1", "{(.a): 1} | tojson", ".a[", "..a"]


@pytest.mark.parametrize("expression", SIMPLE)
def test_simple_paths_take_the_fast_path(expression: str) -> None:
    assert parse_fast_path(expression) is not None


@pytest.mark.parametrize("expression", WIDER)
def test_wider_expressions_take_the_pure_path(expression: str) -> None:
    assert parse_fast_path(expression) is not None


@pytest.mark.parametrize("expression", NOT_SIMPLE)
def test_other_expressions_go_to_jq(expression: str) -> None:
    assert parse_fast_path(expression) is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from(["a", "b", "k", ""]),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "k", "x/y"]),
                                                                       children, max_size=3),
    max_leaves=12,
)


def reference(expression: str, value: object) -> tuple[str, object]:
    try:
        text = json.dumps(value, sort_keys=True)
        return "ok", real_jq.compile(expression).input_text(text).all()
    except ValueError:
        return "error", None


@settings(max_examples=300, deadline=None)
@given(value=json_values, expression=st.sampled_from(SIMPLE))
def test_fast_path_matches_jq(value: object, expression: str) -> None:
    fast = parse_fast_path(expression)
    assert fast is not None
    outputs = fast.evaluate(value)
    kind, expected = reference(expression, value)
    if outputs is None:
        # deferred: the engine must then give jq's own answer or error
        if kind == "ok":
            assert compile_program(expression).all(Document(value)) == expected
        return
    assert kind == "ok", f"fast path answered {outputs!r} where jq raises"
    assert outputs == expected


NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize(("expression", "value", "expected"), [
    # C jq prints NaN as null and the infinities as +-DBL_MAX (before: NaN and inf came back as they were)
    (".a", {"a": NAN}, [None]),
    (".a", {"a": INF}, [1.7976931348623157e+308]),
    ("[.a, .b]", {"a": NAN, "b": -INF}, [[None, -1.7976931348623157e+308]]),
    ("{x: .a}", {"a": INF}, [{"x": 1.7976931348623157e+308}]),
    (".a | type", {"a": NAN}, ["number"]),
])
def test_non_finite_input_numbers_come_back_as_c_jq_prints_them(expression: str, value: dict, expected: list) -> None:
    assert parse_fast_path(expression).evaluate(value) == expected  # type: ignore[union-attr]
    assert real_jq.compile(expression).input_text(Document(value).text).all() == expected


@pytest.mark.parametrize(("expression", "value"), [
    (".a", {"a": {"b": NAN}}),  # an input subtree handed back whole: C jq gives {"b": null}
    (".a", {"a": "x\udc00"}),  # a lone low half: C jq reads U+FFFD
    ("keys", {"\udc00": 1}),
    (".a | length", {"a": "\ud800"}),  # a lone high half: C jq refuses the text
    (".a", {"a": ["\ud83d\ude00"]}),  # a pair decoded as two halves: C jq reads one emoji
])
def test_surrogates_and_non_finite_subtrees_go_to_c_jq(expression: str, value: dict) -> None:
    assert parse_fast_path(expression).evaluate(value) is None  # type: ignore[union-attr]
    text = Document(value).text
    try:
        expected = real_jq.compile(expression).input_text(text).all()
    except ValueError:
        with pytest.raises(Exception, match="surrogate pair escape"):
            compile_program(expression).all(value)
    else:
        assert compile_program(expression).all(value) == expected
