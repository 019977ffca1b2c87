"""One jq pass per object: batched results equal each expression evaluated alone.

``Document.prefetch`` runs the C-jq expressions read from one object as one program; an
expression's outputs must be exactly what its own program gives (values, order, count),
and an expression that fails must fail alone with its own message. Checked for every
catalog expression (each definition's root expressions as the resolver batches them) on
objects hypothesis builds from the fields those expressions read (present, absent, null,
of the wrong type), and on the benchmark generator's objects of every catalog type.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workload_map.paths import default_catalog_dir
from workload_map.definitions.catalog import load_catalog
from workload_map.definitions.validate import jq_fields
from workload_map.errors import JqEvaluationError
from workload_map.jq.engine import Document, compile_program
from workload_map.resolution.extract import component_expressions
from workload_map.resolution.status import status_expressions

CATALOG = list(load_catalog(default_catalog_dir()))


def _root_expressions(definition: Any) -> list[str]:
    return [*status_expressions(definition.root.status), *(e for c in definition.components
                                                          for e in component_expressions(c))]


def _alone(expression: str, value: Any) -> tuple[str, Any]:
    try:
        return "ok", compile_program(expression).all(Document(value))
    except JqEvaluationError as exc:
        return "error", str(exc)


def _batched(expressions: list[str], value: Any) -> dict[str, tuple[str, Any]]:
    doc = Document(value)
    doc.prefetch(expressions)
    out: dict[str, tuple[str, Any]] = {}
    for expression in expressions:
        try:
            out[expression] = ("ok", compile_program(expression).all(doc))
        except JqEvaluationError as exc:
            out[expression] = ("error", str(exc))
    return out


def _field_names(expressions: list[str]) -> list[str]:
    names = {m for e in expressions for m in re.findall(r"\.([A-Za-z_][A-Za-z0-9_]*)", e)}
    return sorted(names | {"status", "spec", "type", "name", "replicas", "conditions"})


def _objects(names: list[str]) -> st.SearchStrategy[Any]:
    leaves = st.one_of(st.none(), st.booleans(), st.integers(-3, 5), st.floats(-2, 4, allow_nan=False),
                       st.sampled_from(["", "True", "False", "Running", "Ready", "Failed", "x", "1"]))
    keys = st.sampled_from(names)
    return st.recursive(leaves, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                        st.dictionaries(keys, inner, max_size=5)), max_leaves=25)


@pytest.mark.parametrize("entry", CATALOG, ids=lambda e: e.definition.name)
def test_batched_outputs_equal_each_program_alone(entry: Any) -> None:
    expressions = _root_expressions(entry.definition)
    if not expressions:
        pytest.skip("no root expression")

    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(_objects(_field_names(expressions)))
    def check(value: Any) -> None:
        batched = _batched(expressions, value)
        for expression in expressions:
            assert batched[expression] == _alone(expression, value), expression

    check()


def test_generated_objects_of_every_type_batch_like_alone() -> None:
    from benchmarks.generator import generate

    definitions = {(e.definition.gvk.group, e.definition.gvk.kind): e.definition for e in CATALOG}
    seen = kept = 0
    for workload in generate(60, seed=3).workloads():
        root = workload.root
        group = root["apiVersion"].rpartition("/")[0]
        definition = definitions.get((group, root["kind"]))
        if definition is None:
            continue
        expressions = _root_expressions(definition)
        batched = _batched(expressions, root)
        assert all(batched[e] == _alone(e, root) for e in expressions)
        doc = Document(root)
        doc.prefetch(expressions)
        kept += sum(doc.batched(e) is not None for e in expressions)
        seen += 1
    # every root expression of the catalog but Argo's `sub` (unbounded: never batched) is on
    # the pure-Python path now, so no batch is left to run for the generated objects
    assert seen >= 30 and kept == 0


def test_a_failing_expression_fails_alone_with_its_own_message() -> None:
    # `.a | ascii_upcase` on {"a": true}: jq refuses a boolean; the other two keep their
    # outputs ([1, 2] and "\"x\""), the failure carries jq's own message (three expressions
    # outside the pure-Python path: `ascii_upcase`, `%`, `tojson`)
    expressions = ['.a | ascii_upcase', '[.b[] | . % 5]', '.c | tojson']
    assert all(compile_program(e).fast is None for e in expressions)
    value = {"a": True, "b": [1, 2], "c": "x"}
    doc = Document(value)
    doc.prefetch(expressions)
    assert compile_program('[.b[] | . % 5]').all(doc) == [[1, 2]]
    assert compile_program('.c | tojson').first(doc) == '"x"'
    with pytest.raises(JqEvaluationError, match="explode input must be a string"):
        compile_program('.a | ascii_upcase').all(doc)
    assert doc.batched('.a | ascii_upcase') is None and doc.batched('.c | tojson') == ['"x"']


def test_every_root_expression_of_the_catalog_is_batchable_or_fast() -> None:
    # the batch holds every bounded C-jq expression; only Argo's regex (`sub`) stays alone
    from workload_map.jq.static import is_bounded

    alone = {e for entry in CATALOG for e in _root_expressions(entry.definition)
             if compile_program(e).fast is None and not is_bounded(e)}
    assert all("sub(" in e for e in alone)
    assert {e for entry in CATALOG for _, e in jq_fields(entry.definition)}  # the catalog is not empty
