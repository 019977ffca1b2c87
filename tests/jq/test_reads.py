"""Read paths of jq expressions: what ``expression_reads`` names is all an expression sees.

Hand-worked cases first, then the soundness property: for every catalog expression the
analysis accepts (root, component and pod expressions alike), changing the input anywhere
outside its read paths leaves jq's outputs (or its error) exactly as they were.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workload_map.paths import default_catalog_dir
from workload_map.definitions.catalog import load_catalog
from workload_map.errors import JqEvaluationError
from workload_map.jq.engine import Document, compile_program
from workload_map.jq.reads import ReadPath, expression_reads
from workload_map.resolution.extract import component_expressions
from workload_map.resolution.readsets import pod_expressions
from workload_map.resolution.status import status_expressions

CATALOG = list(load_catalog(default_catalog_dir()))


@pytest.mark.parametrize(("expression", "reads"), [
    ('.metadata.labels["x/y"]', {("metadata", "labels", "x/y")}),
    (".spec.replicas // .spec.min // 1", {("spec", "replicas"), ("spec", "min")}),
    (".spec.containers[].resources", {("spec", "containers")}),  # an iteration ends the exact path
    ('.["a"].b[0].c', {("a", "b")}),
    ('.metadata.labels["w"] as $w | .metadata.name | ltrimstr($w + "-")',  # `as`: the next stage gets `.` again
     {("metadata", "labels", "w"), ("metadata", "name")}),
    ('.metadata.labels as $l | ($l["a"] // "x") as $p | $l["b"] | select(. != $p)', {("metadata", "labels")}),
    ('.metadata.labels["t"] | select(. == "worker" or . == "chief")', {("metadata", "labels", "t")}),
    (". as $root | $root", {()}),  # a bare `.` reads everything
    ("$__loc__", set()),
])
def test_expressions_read_the_paths_worked_out_by_hand(expression: str, reads: set[ReadPath]) -> None:
    assert expression_reads(expression) == reads


@pytest.mark.parametrize("expression", [
    "length", "keys", "{a}", ".a, .b", "if .a then .b else .c end", '"\\(.a)"', ". as $r | $r.a",
    ".a as [$x] | $x", "def f: .a; f", "reduce .a[] as $x (0; . + $x)", "@base64", ".a?", "to_entries",
])
def test_what_cannot_be_analysed_reads_the_whole_input(expression: str) -> None:
    # each of these reads `.` itself in a stage that receives the input (length, keys, a
    # shorthand key, `,`, if on `.`, an interpolation, ...), or is outside the analysed forms
    assert expression_reads(expression) is None


def _catalog_expressions() -> list[str]:
    out: set[str] = set()
    for entry in CATALOG:
        definition = entry.definition
        out |= set(status_expressions(definition.root.status))
        out |= {e for c in definition.components for e in component_expressions(c)}
        out |= set(pod_expressions(definition))
    return sorted(e for e in out if expression_reads(e) is not None)


EXPRESSIONS = _catalog_expressions()


def _keys(expression: str) -> list[str]:
    names = set(re.findall(r"\.([A-Za-z_][A-Za-z0-9_]*)", expression)) | set(re.findall(r'"([^"\\]{1,60})"', expression))
    return sorted(names | {"metadata", "labels", "spec", "status", "name", "x"})


def _values(keys: list[str]) -> st.SearchStrategy[Any]:
    leaves = st.none() | st.booleans() | st.integers(-2, 3) | st.sampled_from(["", "0", "worker", "a-1", "True"]) \
        | st.sampled_from(keys)
    return st.recursive(leaves, lambda kids: st.lists(kids, max_size=3)
                        | st.dictionaries(st.sampled_from(keys), kids, max_size=4), max_leaves=12)


def _outputs(expression: str, value: Any) -> tuple[str, Any]:
    try:
        return "ok", compile_program(expression).all(Document(value))
    except JqEvaluationError as exc:
        return "error", str(exc)


def _set(obj: dict[str, Any], path: list[str], value: Any) -> None:
    for key in path[:-1]:
        nxt = obj.get(key)
        if not isinstance(nxt, dict):
            nxt = obj[key] = {}
        obj = nxt
    obj[path[-1]] = value


def _mutate(obj: dict[str, Any], path: list[str], value: Any, reads: frozenset[ReadPath]) -> None:
    """Set ``path`` unless that means replacing a non-object on the way above a read path."""
    for depth, key in enumerate(path[:-1]):
        nxt = obj.get(key)
        if key in obj and not isinstance(nxt, dict):
            if not _outside(path[:depth + 1], reads):
                return  # `.metadata` is a string: making it an object would change `.metadata.labels`
            nxt = obj[key] = {}
        elif nxt is None:
            nxt = obj[key] = {}  # jq reads a missing and an empty parent alike (null)
        obj = nxt
    obj[path[-1]] = value


def _outside(path: list[str], reads: frozenset[ReadPath]) -> bool:
    """Neither inside a read path nor above one (setting it would replace a read subtree)."""
    p = tuple(path)
    return all(p[:len(r)] != r and r[:len(p)] != p for r in reads)


@pytest.mark.parametrize("expression", EXPRESSIONS)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_change_outside_the_read_paths_leaves_the_outputs_unchanged(expression: str, data: st.DataObject) -> None:
    reads = expression_reads(expression)
    assert reads is not None
    keys = _keys(expression)
    base = data.draw(st.dictionaries(st.sampled_from(keys), _values(keys), max_size=5))
    for path in sorted(reads):  # the read paths themselves get values, so the outputs are not all null
        if path and data.draw(st.booleans()):
            _set(base, list(path), data.draw(_values(keys)))
    changed: dict[str, Any] = copy.deepcopy(base)
    for _ in range(data.draw(st.integers(1, 4))):
        path = data.draw(st.lists(st.sampled_from(keys), min_size=1, max_size=4))
        if _outside(path, reads):
            _mutate(changed, path, data.draw(_values(keys)), reads)
    assert _outputs(expression, changed) == _outputs(expression, base)
