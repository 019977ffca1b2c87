"""jq's value semantics in the pure path: number text, order, evaluation order, scoping, errors.

Expected values are worked out from jq's rules (jq 1.7 prints a computed double in the
shortest form that reads back, exponent form below 1e-4 and from 1e17 on for one digit;
an input number keeps its literal, printed in decNumber's scientific form; generators on
both sides of a binary operator run the right side in the outer loop) and checked against
the C library too.
"""

from __future__ import annotations

import json
from typing import Any

import jq as real_jq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workload_map.errors import JqEvaluationError
from workload_map.jq import Document, compile_program
from workload_map.jq.fastpath import parse_fast_path
from workload_map.jq.values import input_float_text, shortest


def pure(expression: str, value: Any) -> list[Any] | None:
    fast = parse_fast_path(expression)
    assert fast is not None, expression
    return fast.evaluate(value)


def c_jq(expression: str, value: Any) -> list[Any]:
    return list(real_jq.compile(expression).input_text(Document(value).text).all())


@pytest.mark.parametrize(("number", "text"), [
    (1e-05, "1e-05"), (0.0001, "0.0001"), (1e16, "1e+16"), (1e15, "1000000000000000"),
    (123456789012345680.0, "123456789012345680"), (0.1 + 0.2, "0.30000000000000004"), (3.0, "3"),
    (1.5e300, "1.5e+300"), (5e-324, "5e-324"), (-2.5e-7, "-2.5e-07"), (1 / 3, "0.3333333333333333"),
])
def test_computed_doubles_print_as_jq(number: float, text: str) -> None:
    assert shortest(number) == text
    assert c_jq(". + 0 | tostring", number) == [text]


@pytest.mark.parametrize(("number", "text"), [
    (1.5, "1.5"), (1e-05, "0.00001"), (2.5e-07, "2.5E-7"), (1.5e-300, "1.5E-300"), (3.0, "3"), (-0.0, "0"),
    (0.1, "0.1"), (123.25, "123.25"),
])
def test_input_numbers_print_their_literal(number: float, text: str) -> None:
    assert input_float_text(number) == text
    assert pure(".a | tostring", {"a": number}) == c_jq(".a | tostring", {"a": number, "pad": "1.0"}) == [text]


@pytest.mark.parametrize(("expression", "text"), [
    (".a * 3 | tostring", "0"), (".a / 7 | tostring", "0"), ("[.a / 3] | first | tostring", "0"),
    (".a * -1 | tostring", "-0"), ("0 * -1 | tostring", "-0"),
])
def test_input_negative_zero_is_read_as_zero(expression: str, text: str) -> None:
    # Document.text writes an input -0.0 as 0, so C jq computes from +0; a computed -0 keeps its sign
    value = {"a": -0.0, "pad": "1.0"}
    assert pure(expression, value) == c_jq(expression, value) == [text]


@settings(max_examples=150, deadline=None, database=None)
@given(number=st.floats(allow_nan=False, allow_infinity=False) | st.integers(-10 ** 6, 10 ** 6),
       expression=st.sampled_from([".a | tostring", ".a + 0 | tostring", ".a * 3 | tostring", ".a / 7 | tostring",
                                   '"n=\\(.a)"', "[.a, 1] | max", ".a < 1", ".a | floor | tostring", ".a - .a",
                                   "{x: (.a * 2)}", "[.a / 3] | first | tostring"]))
def test_numbers_against_c_jq(number: float, expression: str) -> None:
    value = {"a": number, "pad": "1.0"}  # the pad makes Document write integral floats as integers
    outputs = pure(expression, value)
    if outputs is None:
        return
    expected = c_jq(expression, value)
    assert json.dumps(outputs) == json.dumps(expected)
    assert [type(v) for v in outputs] == [type(v) for v in expected]


ORDERED = [None, False, True, -1, 0, 1.5, 2, "", "B", "a", "ab", [], [0], [0, 1], [1], {}, {"a": 2}, {"a": 3},
           {"a": 1, "b": 0}, {"b": 0}]


def test_total_order_across_types() -> None:
    # null < false < true < numbers < strings < arrays < objects; objects by sorted keys, then values
    for i, a in enumerate(ORDERED):
        for j, b in enumerate(ORDERED):
            value = {"x": a, "y": b}
            assert pure(".x < .y", value) == [i < j], (a, b)
            assert pure(".x == .y", value) == [i == j]
    assert c_jq("[.[] | [.] ] | sort | map(.[0])", ORDERED) == [ORDERED]


@settings(max_examples=150, deadline=None, database=None)
@given(st.lists(st.recursive(st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from([0.5, -0.0, "a", ""]),
                             lambda c: st.lists(c, max_size=2) | st.dictionaries(st.sampled_from("ab"), c, max_size=2),
                             max_leaves=6), min_size=2, max_size=2))
def test_comparisons_and_addition_against_c_jq(pair: list[Any]) -> None:
    for expression in (".[0] < .[1]", ".[0] == .[1]", ".[0] >= .[1]", ".[0] + .[1]", "[.[0], .[1]] | max",
                       "[.[] | not]", ".[0] // .[1]", ".[0] and .[1]", "[.[0] | length?]"):
        outputs = pure(expression, pair)
        if outputs is not None:  # input subtrees come back as they are: -0.0 where the binding gives 0
            assert canonical(outputs) == canonical(c_jq(expression, pair))


def canonical(value: Any) -> str:
    def integral(v: Any) -> Any:
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, list):
            return [integral(x) for x in v]
        if isinstance(v, dict):
            return {k: integral(x) for k, x in v.items()}
        return v
    return json.dumps(integral(value), sort_keys=True)


@pytest.mark.parametrize(("expression", "value", "expected"), [
    ("0 * -1 | tostring", None, ["-0"]),
    ("[(1,2) + (10,20)]", None, [[11, 12, 21, 22]]),  # the right operand in the outer loop
    ("[(1,2) == (1,2)]", None, [[True, False, False, True]]),
    ("[(false,true) or (true,false)]", None, [[True, False, True]]),  # `or`: the left in the outer loop
    ("[{a:(1,2), b:(3,4)}]", None, [[{"a": 1, "b": 3}, {"a": 1, "b": 4}, {"a": 2, "b": 3}, {"a": 2, "b": 4}]]),
    ('["\\(1,2)-\\(3,4)"]', None, [["1-3", "2-3", "1-4", "2-4"]]),  # the last interpolation outermost
    ("1 as $x | def f: $x; 2 as $x | [f, $x]", None, [[1, 2]]),  # a function sees its definition's scope
    ("def c($t): .[] | select(.type == $t) | .n; [c(\"a\", \"b\")]", [{"type": "b", "n": 1}, {"type": "a", "n": 2}],
     [[2, 1]]),
    ("[.a[]?]", {"a": 5}, [[]]),
    ("[(1, error(\"x\"), 2)?]", None, [[1]]),  # `?` stops at the error, keeping what came before
    ("[.[] | .a?]", [1, {"a": 2}], [[2]]),
    ("{b: 1} + {a: 2} | [.[]]", None, [[1, 2]]),  # a built object keeps its insertion order
    ("[.[]]", {"b": 1, "a": 2}, [[2, 1]]),  # the input as jq reads it: sorted keys
    (".s[1:] + .s[:1]", {"s": "héllo"}, ["élloh"]),
    ("[.[] | tonumber]", ["1.50", "+5", "5.", "1e3"], [[1.5, 5, 5, 1000]]),
    ('"\\("1.50" | tonumber)"', None, ["1.50"]),  # tonumber keeps the literal's text
    ("to_entries | map(.key)", {"b": 1, "a": 2}, [["a", "b"]]),
    ("with_entries(select(.value != null))", {"b": 1, "a": None}, [{"b": 1}]),
    ("any(.[]; . > 1), all(. > 0), IN(2, 3)", [1, 2], [True, True, False]),
    ('.a // "x" | ltrimstr("x") | startswith("")', {"a": False}, [True]),
])
def test_hand_worked_semantics(expression: str, value: Any, expected: list[Any]) -> None:
    assert pure(expression, value) == expected
    assert c_jq(expression, value) == expected


@pytest.mark.parametrize(("expression", "value", "message"), [
    (".a.b", {"a": 5}, r'Cannot index number with string \("b"\)'),
    (".a.b // 3", {"a": 5}, r'Cannot index number with string \("b"\)'),  # `//` does not hide an error (jq 1.7+)
    (".spec.replicas * .spec.parallelism", {"spec": {"replicas": 2}}, "cannot be multiplied"),
    (".a | length", {"a": True}, "boolean .true. has no length"),
    (".a[]", {}, "Cannot iterate over null"),
])
def test_errors_defer_to_c_jq_for_its_message(expression: str, value: Any, message: str) -> None:
    assert pure(expression, value) is None
    with pytest.raises(JqEvaluationError, match=message):
        compile_program(expression).all(Document(value))
