"""jq engine behaviour that definitions depend on (gojq compatibility, caps, errors)."""

from __future__ import annotations

import pytest

from workload_map.errors import JqCompileError, JqEvaluationError
from workload_map.jq import MAX_RESULTS, Document, compile_program, stringify
from workload_map.jq.engine import MAX_INPUT_BYTES


def run(expression: str, value: object) -> list[object]:
    return compile_program(expression).all(Document(value))


def test_object_keys_iterate_in_sorted_order_like_gojq() -> None:
    # C jq keeps insertion order; gojq sorts. Map-keyed instances (Dynamo services) rely on it.
    services = {"spec": {"services": {"worker": {"replicas": 3}, "frontend": {"replicas": 1}, "decode": {}}}}
    assert run(".spec.services | to_entries[] | .key", services) == ["decode", "frontend", "worker"]
    assert run(".spec.services | .[] | (.replicas // 1)", services) == [1, 1, 3]
    assert run(".spec.services | keys_unsorted", services) == [["decode", "frontend", "worker"]]


def test_missing_paths_give_null_and_select_gives_nothing() -> None:
    assert run(".spec.nothing.deeper", {"spec": {}}) == [None]
    assert run(".items[] | select(.x)", {"items": [{"x": False}]}) == []
    assert compile_program(".a").first(Document({}), default="dflt") is None
    assert compile_program("empty").first(Document({}), default="dflt") == "dflt"


def test_integral_floats_compare_equal_to_ints_and_stringify_like_go() -> None:
    assert run(".a == 3", {"a": 3.0}) == [True]
    assert stringify(3.0) == "3"
    assert stringify(2.5) == "2.5"
    assert stringify(True) == "true"
    assert stringify("leader") == "leader"
    assert stringify(None) == "<nil>"


def test_result_cap_reached_is_an_error_like_gojq() -> None:
    values = {"xs": list(range(MAX_RESULTS))}
    with pytest.raises(JqEvaluationError, match="exceed the allowed number 1000"):
        run(".xs[]", values)  # exactly 1000 outputs already fails (fast path)
    with pytest.raises(JqEvaluationError, match="exceed the allowed number 1000"):
        run(".xs[] | . + 0", values)  # and through jq
    assert len(run(".xs[]", {"xs": list(range(MAX_RESULTS - 1))})) == MAX_RESULTS - 1


def test_input_size_cap() -> None:
    # the cap guards the C library (the pure-Python path reads the value in place)
    huge = {"blob": "x" * (MAX_INPUT_BYTES + 10)}
    with pytest.raises(JqEvaluationError, match="exceeds the limit"):
        run(".blob | ascii_upcase", huge)


def test_errors_are_typed_and_carry_the_expression() -> None:
    with pytest.raises(JqCompileError) as compile_error:
        compile_program(".a[")
    assert compile_error.value.expression == ".a["
    with pytest.raises(JqEvaluationError) as runtime:
        run(".spec.replicas * .spec.parallelism", {"spec": {"replicas": 2}})  # number * null
    assert runtime.value.expression == ".spec.replicas * .spec.parallelism"
    assert "cannot be multiplied" in runtime.value.reason
    assert "JqError" not in str(runtime.value) and ".spec.replicas" in str(runtime.value)


def test_programs_are_compiled_once() -> None:
    assert compile_program(".spec.a | length") is compile_program(".spec.a | length")


def test_integral_floats_print_as_integers_inside_jq_like_gojq() -> None:
    # C jq keeps the literal "2.0"; gojq (float64) prints 2. byExpression compares `tostring`.
    assert run(".n | tostring", {"n": 2.0}) == ["2"]
    assert run(".n | tostring", {"n": 2.5}) == ["2.5"]
    assert run(".s", {"s": "v1.0"}) == ["v1.0"]
