"""Hostile jq sources: deep nesting and lone surrogate escapes give a finding, never a crash.

Before these fixes, ``(((...)))`` ten thousand deep made the pure-Python parser raise
``RecursionError`` out of ``check_expression`` (``wmap validate`` printed a traceback, REST
answered "the definition cannot be read (RecursionError)" without the field); ``"\\ud83d"``
was accepted although C jq refuses it; and string interpolations nested past the lexer's
recursion raised as well. C jq's own words are the expected findings (jq 1.7: its parser
stack is exhausted at depth ~10,000; a lone high surrogate escape is a syntax error; a lone
low one decodes to U+FFFD).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from workload_map.paths import default_catalog_dir
from workload_map.definitions.load import check_definition
from workload_map.jq import check_expression
from workload_map.errors import JqCompileError, JqEvaluationError
from workload_map.jq import fastpath
from workload_map.jq.engine import MAX_RESULTS, Document, compile_program
from workload_map.jq.fastpath import parse_fast_path
from workload_map.jq.parse import parse

DEEP = 10_000


def test_deep_parentheses_are_c_jqs_finding() -> None:
    expression = "(" * DEEP + ".spec.replicas" + ")" * DEEP
    assert parse(expression) is None
    assert parse_fast_path(expression) is None
    with pytest.raises(JqCompileError, match="memory exhausted"):
        compile_program(expression)
    # past jq's parser depth (10,000) is past the length limit too: refused before compiling
    assert check_expression(expression) == [
        "failed validation: the expression is 20,014 characters long; at most 16,384 are allowed"]


def test_deep_pipes_and_arrays_are_c_jqs_finding() -> None:
    for expression in (" | ".join(["."] * DEEP), "[" * DEEP + "." + "]" * DEEP):
        with pytest.raises(JqCompileError, match="memory exhausted"):
            compile_program(expression)
        problems = check_expression(expression)
        assert len(problems) == 1 and "characters long; at most 16,384 are allowed" in problems[0]


def test_moderate_nesting_still_takes_the_pure_path() -> None:
    fast = parse_fast_path("(" * 40 + ".a" + ")" * 40)
    assert fast is not None and fast.evaluate({"a": 3}) == [3]


def test_lone_high_surrogate_escape_is_refused_as_c_jq_does() -> None:
    assert parse_fast_path('"\\ud83d" | 1') is None
    problems = check_expression('"\\ud83d" | 1')
    assert len(problems) == 1 and "surrogate pair escape" in problems[0]


def test_lone_low_surrogate_escape_gives_c_jqs_replacement_character() -> None:
    assert parse_fast_path('"\\udc00"') is None
    assert compile_program('"\\udc00"').all({}) == ["\ufffd"]


def test_surrogate_pair_escape_stays_on_the_pure_path() -> None:
    fast = parse_fast_path('"\\ud83d\\ude00"')
    assert fast is not None and fast.evaluate({}) == ["\U0001f600"]


def test_interpolations_nested_past_the_lexer_are_refused_not_raised() -> None:
    deep = '"\\(' * 3000 + "env" + ')"' * 3000
    assert check_expression(deep) == ["failed validation: string interpolations are nested too deeply to check"]
    shallow = '"\\(' * 30 + "env" + ')"' * 30
    assert check_expression(shallow) == ["failed validation: function 'env' reaches outside the object and is not allowed"]


def test_a_definition_with_a_deep_path_names_the_field() -> None:
    doc = yaml.safe_load(Path(default_catalog_dir(), "apps-replicaset-v1.yaml").read_text())
    doc["spec"]["structureDefinition"]["rootComponent"]["scaleDefinition"]["replicasPath"] = (
        "(" * DEEP + ".spec.replicas" + ")" * DEEP)
    definition, problems = check_definition(doc)
    assert definition is None
    assert [p.path for p in problems] == ["spec.structureDefinition.rootComponent.scaleDefinition.replicasPath"]
    assert problems[0].message == ("jq expression failed validation: the expression is 20,014 characters long; "
                                   "at most 16,384 are allowed")


def test_the_pure_path_stops_where_c_jq_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    """``first`` takes one output and ``all`` stops at the cap, as C jq's iteration does.

    ``.a[] as $x | .a[] as $y | .a[] | $x`` over 20 items has 20^3 = 8,000 outputs, the
    first 400 (= 20 * 20) of them 0. Before, the pure path built all 8,000 before the cap
    check (over 1,000 items: 10^9 outputs, minutes of a resolver worker, where C jq stops
    after 1,000 in 2 ms).
    """
    made: list[Any] = []
    real_output = fastpath.jv.output
    monkeypatch.setattr(fastpath.jv, "output", lambda v: made.append(v) or real_output(v))
    program = compile_program(".a[] as $x | .a[] as $y | .a[] | $x")
    assert program.fast is not None
    doc = Document({"a": list(range(20))})
    assert program.first(doc) == 0
    assert len(made) == 1
    made.clear()
    with pytest.raises(JqEvaluationError, match="query results exceed the allowed number 1000"):
        program.all(doc)
    assert len(made) == MAX_RESULTS == 1000
    made.clear()
    assert compile_program(".a[] as $x | .a[] | $x").all(Document({"a": [1, 2]})) == [1, 1, 2, 2]
    assert len(made) == 4


def test_the_422_for_a_hostile_expression_names_the_field_once_and_shows_the_expression_cut() -> None:
    # before, a 20,014-character expression was in `message` twice (quoted, then in jq's own echo of
    # the source line) and twice again in `details`; an unclosed one of 8,014 (under the length limit)
    import json

    from workload_map.api.errors import response_for
    from workload_map.errors import InvalidDefinition

    doc = yaml.safe_load(Path(default_catalog_dir(), "apps-replicaset-v1.yaml").read_text())
    expression = "(" * 8_000 + ".spec.replicas"
    doc["spec"]["structureDefinition"]["rootComponent"]["scaleDefinition"]["replicasPath"] = expression
    _, problems = check_definition(doc)
    answer = response_for(InvalidDefinition(problems, "replicasets"))
    body = json.loads(bytes(answer.body))
    path = "spec.structureDefinition.rootComponent.scaleDefinition.replicasPath"
    assert answer.status_code == 422 and body["message"].startswith(
        f"invalid definition 'replicasets': {path}: jq expression failed to parse: ")
    assert "(" * 300 not in body["message"] and len(body["message"]) < 1000
    (detail,) = body["details"]
    assert detail["path"] == path and detail["message"] == body["message"].split(f"{path}: ", 1)[1]
    assert detail["expression"] == "(" * 200 + "... (8014 characters)"


def test_a_short_expression_is_shown_whole_in_the_details_only() -> None:
    doc = yaml.safe_load(Path(default_catalog_dir(), "apps-replicaset-v1.yaml").read_text())
    doc["spec"]["structureDefinition"]["rootComponent"]["scaleDefinition"]["replicasPath"] = ".spec | del(.x)"
    _, problems = check_definition(doc)
    assert [(str(p), p.to_dict()["expression"]) for p in problems] == [
        ("spec.structureDefinition.rootComponent.scaleDefinition.replicasPath: jq expression failed validation: "
         "del function is not allowed", ".spec | del(.x)")]
