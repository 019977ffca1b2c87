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
