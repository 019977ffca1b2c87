"""Forbidden-construct checks, wherever the construct is nested."""

from __future__ import annotations

import pytest

from workload_map.jq import check_expression
from workload_map.jq.static import forbidden_constructs, is_bounded


@pytest.mark.parametrize(("expression", "reason"), [
    (".a | del(.b)", "del function is not allowed"),
    ("[range(10)]", "function 'range' may produce excessive output and is not allowed"),
    ("[paths]", "function 'paths' may produce excessive output and is not allowed"),
    ("recurse", "function 'recurse' may produce excessive output and is not allowed"),
    ("walk(.)", "function 'walk' may produce excessive output and is not allowed"),
    ("repeat(.)", "function 'repeat' may produce excessive output and is not allowed"),
    ("..", "recursive descent operator '..' is not allowed"),
    ("[..]", "recursive descent operator '..' is not allowed"),
    (".a = 1", "modifying operator '=' is not allowed"),
    (".a |= 1", "modifying operator '|=' is not allowed"),
    (".a += 1", "modifying operator '+=' is not allowed"),
    (".a -= 1", "modifying operator '-=' is not allowed"),
    (".a *= 1", "modifying operator '*=' is not allowed"),
    (".a /= 1", "modifying operator '/=' is not allowed"),
    (".a %= 1", "modifying operator '%=' is not allowed"),
    (".a //= 1", "modifying operator '//=' is not allowed"),
    # hidden inside constructs the older upstream walker missed
    ("(.a | [paths])", "function 'paths' may produce excessive output and is not allowed"),
    ("if .a then range(3) else 0 end", "function 'range' may produce excessive output and is not allowed"),
    ("try (walk(.)) catch 0", "function 'walk' may produce excessive output and is not allowed"),
    ('"x\\(recurse)"', "function 'recurse' may produce excessive output and is not allowed"),
    ("{a: (.b | del(.c))}", "del function is not allowed"),
    ("reduce (.[] | paths) as $p (0; . + 1)", "function 'paths' may produce excessive output and is not allowed"),
    ("def f: walk(.); f", "function 'walk' may produce excessive output and is not allowed"),
    (".a[range(0;1)]", "function 'range' may produce excessive output and is not allowed"),
    # beyond upstream: nothing outside the object
    ("$ENV | to_entries", "variable '$ENV' reads the server's environment and is not allowed"),
    ("env.HOME", "function 'env' reaches outside the object and is not allowed"),
    ('"\\(env)"', "function 'env' reaches outside the object and is not allowed"),
    ("[inputs]", "function 'inputs' reaches outside the object and is not allowed"),
    (". as $x | input", "function 'input' reaches outside the object and is not allowed"),
    ("debug", "function 'debug' reaches outside the object and is not allowed"),
    ('"x" | halt_error', "function 'halt_error' reaches outside the object and is not allowed"),
    ('import "a" as a; .', "modules (import/include) are not allowed"),
])
def test_forbidden(expression: str, reason: str) -> None:
    assert reason in forbidden_constructs(expression)
    assert f"failed validation: {reason}" in check_expression(expression)


@pytest.mark.parametrize("expression", [
    ".range", ".paths.del", "{range: 1}", "{paths}", ".a == 1", ".a != 1", ".a <= 1 and .b >= 2",
    ".a // 1", '"a..b"', '"del(x)"', "def range: 1; 2", "to_entries[] | select(.value > 0) | .key",
    "reduce .[] as $x (0; . + $x)", "[.[] | tostring]", "any(.x > 0)", ".a as $range | $range", ".env",
    "{env: 1}", ".metadata.labels.input",
])
def test_allowed(expression: str) -> None:
    assert check_expression(expression) == []


def test_parse_errors_are_reported() -> None:
    problems = check_expression(".a[")
    assert problems and problems[0].startswith("failed to parse:")


@pytest.mark.parametrize("expression, bounded", [
    ('.spec.replicas // 1', True),
    ('[.status.conditions[]? | select(.type == "Ready")] | length', True),
    # a non-recursive helper, as the catalog writes its condition tests
    ('def c($t): any(.status.conditions[]?; .type == $t); if c("Failed") then 1 else 0 end', True),
    ('def f: def g: 1; g; f', True),  # the inner definition's `;` does not end the outer one
    ('{range: 1, until: 2}', True),  # object keys, not calls
    ('reduce .items[] as $i (0; . + $i.n)', True),
    ('def f: f; f', False),  # recursion
    ('def f(x): x | f(x); 1', False),
    ('.a | until(. > 3; . + 1)', False),
    ('[limit(5; repeat(1))]', False),
    ('.name | test("a+$")', False),  # Oniguruma backtracking
    ('.name | sub("-[0-9]+$"; "")', False),
    ('[..]', False),
])
def test_bounded_expressions(expression: str, bounded: bool) -> None:
    assert is_bounded(expression) is bounded


def test_every_catalog_expression_but_one_regex_is_bounded() -> None:
    # the one-shot CLI resolves these in process; only Argo's `sub(...)` needs the worker
    from workload_map.paths import default_catalog_dir
    from workload_map.definitions.catalog import load_catalog
    from workload_map.definitions.validate import jq_fields

    unbounded = {expression for entry in load_catalog(default_catalog_dir())
                 for _, expression in jq_fields(entry.definition) if not is_bounded(expression)}
    assert len(unbounded) == 1 and 'sub("-[0-9]+$"; "")' in next(iter(unbounded))
