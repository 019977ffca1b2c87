"""The widened pure-Python path gives C jq's exact outputs on every catalog expression it accepts.

For every expression of the catalog (and of the upstream definitions in ../shared, when
present) that ``parse_fast_path`` compiles, hypothesis builds objects along the paths the
expression names (``.spec.workerGroupSpecs[]?.template``: a dict under ``spec``, a list under
``workerGroupSpecs`` ...) with type-varied values at every end (null, booleans, integers,
floats such as 1e16, 1.5, -0.0 and 1e-05, NaN and infinities, strings taken from the
expression and strings holding surrogates, arrays, objects) and nested again. The pure path must then answer exactly what C jq answers on the
text ``Document`` gives it (values, order, count; a scalar's type: ``int`` vs ``float`` vs
``bool``), or defer (``None``), never answer where jq raises. Containers taken from the
input are compared with numbers as the binding gives them back (integral floats as
integers, integers beyond 2**53 rounded to doubles): the pure path hands the input's own
subtrees back, as the plain-path fast path always did.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import jq as real_jq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conformance.upstream import upstream_files
from workload_map.paths import default_catalog_dir
from workload_map.definitions import load_documents
from workload_map.definitions.catalog import load_catalog
from workload_map.definitions.load import load_definition
from workload_map.definitions.validate import jq_fields
from workload_map.errors import InvalidRequest
from workload_map.jq import Document
from workload_map.jq.fastpath import parse_fast_path
from workload_map.jq.static import lex

_ITER = object()


def _catalog_expressions() -> list[str]:
    return sorted({e for entry in load_catalog(default_catalog_dir()) for _, e in jq_fields(entry.definition)})


def _upstream_expressions() -> list[str]:
    found: set[str] = set()
    for path in upstream_files("catalog"):
        try:
            documents = load_documents(path.read_text(encoding="utf-8"))
        except InvalidRequest:
            continue  # a file of the conformance data this project does not read either
        for document in documents:
            try:
                found |= {e for _, e in jq_fields(load_definition(document))}
            except (InvalidRequest, KeyError, TypeError, ValueError):
                continue
    return sorted(found)


CATALOG = _catalog_expressions()
UPSTREAM = _upstream_expressions()
PURE = [e for e in CATALOG if parse_fast_path(e) is not None]
PURE_UPSTREAM = [e for e in UPSTREAM if e not in CATALOG and parse_fast_path(e) is not None]


def test_catalog_expressions_on_the_pure_path() -> None:
    # 252 distinct expressions (with the three extension annotations holding jq: AppWrapper's
    # nested-templates, JobSet's degraded-when, TrainJob's unknown-when); only Argo Workflow's
    # `sub(...)` (a regular expression) goes to C jq
    assert len(CATALOG) == 252
    assert len(PURE) == 251
    assert [e for e in CATALOG if e not in PURE] == [
        '.metadata.labels["workflows.argoproj.io/workflow"] as $wf | .metadata.name | ltrimstr($wf + "-")'
        ' | sub("-[0-9]+$"; "")']


def test_upstream_expressions_on_the_pure_path() -> None:
    if not UPSTREAM:
        pytest.skip("conformance data not present in ../shared")
    assert (len(UPSTREAM), sum(parse_fast_path(e) is not None for e in UPSTREAM)) == (302, 302)


def _chains(expression: str) -> list[tuple[Any, ...]]:
    """The key paths an expression names: runs of ``.k``, ``["k"]``, ``[]`` tokens."""
    chains: list[tuple[Any, ...]] = []
    current: list[Any] = []
    tokens = lex(expression)
    at = 0
    while at < len(tokens):
        kind, value = tokens[at]
        step: list[Any] = []
        if kind == "field":
            step = [value[1:]]
        elif (kind, value) == ("op", "[") and at + 1 < len(tokens) and tokens[at + 1] == ("op", "]"):
            step, at = [_ITER], at + 1
        elif (kind, value) == ("op", "[") and tokens[at + 1][0] == "string" and tokens[at + 2] == ("op", "]"):
            step, at = [tokens[at + 1][1]], at + 2
        elif (kind, value) in (("op", "?"), ("op", ".")):
            at += 1
            continue
        if step:
            current.extend(step)
        elif current:
            chains.append(tuple(current))
            current = []
        at += 1
    if current:
        chains.append(tuple(current))
    return chains or [("spec",)]


def _strings(expression: str) -> list[str]:
    return sorted({v for k, v in lex(expression) if k in ("string", "strpart") and len(v) < 40})


def _put(node: Any, steps: tuple[Any, ...], value: Any) -> Any:
    if not steps:
        return value
    if steps[0] is _ITER:
        items = node if isinstance(node, list) else []
        return [*items, _put(None, steps[1:], value)]
    base = dict(node) if isinstance(node, dict) else {}
    base[steps[0]] = _put(base.get(steps[0]), steps[1:], value)
    return base


def _objects(expression: str) -> st.SearchStrategy[Any]:
    chains = _chains(expression)
    # "\udc00x" and the split pair "\ud83d\ude00": strings Python's json and YAML decode from
    # escapes, which C jq reads as U+FFFD and as one emoji (a lone high half: see test_fastpath)
    words = _strings(expression) + ["", "x", "0", "1", "10", "-2", "1.50", "True", "False", "Running", "\udc00x",
                                    "\ud83d\ude00"]
    leaves = st.one_of(
        st.none(), st.booleans(), st.integers(-3, 5), st.sampled_from([2147483647, 2 ** 53 + 1, 10 ** 20]),
        st.sampled_from([1.5, -0.0, 0.5, 2.0, 1e16, 1e-05, 3.0, 2.5e-7, 1.5e300, 0.1]),
        st.sampled_from([math.nan, math.inf, -math.inf]),  # a JSON body's NaN/Infinity, YAML .nan/.inf
        st.floats(-4, 6, allow_nan=False, allow_infinity=False), st.sampled_from(words))

    def tree(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        def build(pairs: list[tuple[tuple[Any, ...], Any]]) -> Any:
            node: Any = {}
            for chain, value in pairs:
                node = _put(node, chain, value)
            return node
        paths = st.sampled_from(chains) | st.sampled_from(chains).flatmap(
            lambda c: st.integers(0, len(c) - 1).map(lambda n: c[n:]))
        return st.one_of(st.lists(st.tuples(paths, inner), max_size=4).map(build), st.lists(inner, max_size=3),
                         st.dictionaries(st.sampled_from(words), inner, max_size=2))

    return st.recursive(leaves, tree, max_leaves=24)


def _typed(value: Any, *, top: bool = True) -> Any:
    """A comparable form: scalars keep their type; inside containers integral floats are ints."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value if not top else (type(value).__name__, value)
    if isinstance(value, (int, float)) and not top and float(value).is_integer():
        value = int(float(value))  # as the binding gives numbers back (doubles)
    if isinstance(value, (int, float)):
        return (type(value).__name__ if top else "number", float(value) if isinstance(value, float) else value)
    if isinstance(value, list):
        return ("array", [_typed(v, top=False) for v in value])
    return ("object", sorted((k, _typed(v, top=False)) for k, v in value.items()))


def _reference(program: Any, value: Any) -> tuple[str, Any]:
    try:
        return "ok", program.input_text(Document(value).text).all()
    except ValueError as exc:
        return "error", str(exc)


ANSWERED: Counter[str] = Counter()


def _check(expression: str, examples: int) -> None:
    fast = parse_fast_path(expression)
    assert fast is not None
    program = real_jq.compile(expression)

    @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
    @given(_objects(expression))
    def check(value: Any) -> None:
        outputs = fast.evaluate(value)
        if outputs is None:
            return  # deferred: C jq answers (its outputs or its error)
        kind, expected = _reference(program, value)
        assert kind == "ok", f"pure path answered {outputs!r} where jq raises {expected}"
        assert [_typed(v) for v in outputs] == [_typed(v) for v in expected]
        ANSWERED[expression] += 1

    check()


@pytest.mark.parametrize("expression", PURE, ids=range(len(PURE)))
def test_pure_path_equals_c_jq_on_catalog_expressions(expression: str) -> None:
    _check(expression, 12)


def test_pure_path_answers_generated_workloads_like_c_jq() -> None:
    # the benchmark generator's objects of every catalog type: every pure expression of the
    # type's definition answers exactly as C jq on its root object, and nearly always
    # without deferring (a deferral costs a C-jq evaluation)
    from benchmarks.generator import generate

    from workload_map.resolution.extract import component_expressions
    from workload_map.resolution.status import status_expressions

    definitions = {(e.definition.gvk.group, e.definition.gvk.kind): e.definition
                   for e in load_catalog(default_catalog_dir())}
    answered = deferred = 0
    for workload in generate(40, seed=5).workloads():
        root = workload.root
        definition = definitions.get((root["apiVersion"].rpartition("/")[0], root["kind"]))
        if definition is None:
            continue
        expressions = [*status_expressions(definition.root.status),
                       *(e for c in definition.components for e in component_expressions(c))]
        for expression in expressions:
            fast = parse_fast_path(expression)
            if fast is None:
                continue
            outputs = fast.evaluate(root)
            if outputs is None:
                deferred += 1
                continue
            expected = real_jq.compile(expression).input_text(Document(root).text).all()
            assert [_typed(v) for v in outputs] == [_typed(v) for v in expected], expression
            answered += 1
    assert answered > 300 and deferred * 50 < answered, (answered, deferred)


@pytest.mark.parametrize("expression", PURE_UPSTREAM, ids=range(len(PURE_UPSTREAM)))
def test_pure_path_equals_c_jq_on_upstream_expressions(expression: str) -> None:
    _check(expression, 6)


def test_what_the_parser_accepts_c_jq_compiles() -> None:
    # a pure expression is never compiled by C jq unless an evaluation defers, so the parser
    # must refuse whatever jq refuses: 3,000 mutations of catalog expressions (a span cut,
    # doubled, or a token inserted), every one it accepts must compile
    import random

    rng = random.Random(1)
    inserts = [" ", ".", "|", ",", "(", ")", "[", "]", "{", "}", "?", ":", ";", "$", '"', "as", "end", "-", "1"]
    accepted = 0
    for _ in range(3000):
        expression = rng.choice(CATALOG)
        at = rng.randrange(len(expression))
        to = min(len(expression), at + rng.randrange(1, 6))
        choice = rng.random()
        if choice < 0.4:
            mutated = expression[:at] + expression[to:]
        elif choice < 0.7:
            mutated = expression[:to] + expression[at:to] + expression[to:]
        else:
            mutated = expression[:at] + rng.choice(inserts) + expression[at:]
        if parse_fast_path(mutated) is not None:
            real_jq.compile(mutated)  # raises ValueError when jq refuses it
            accepted += 1
    assert accepted > 300
    for refused in ["{(1): 2}", "{a: 1 + 2}", ".a as [$x] | $x", "1 == 1 == 1", "{a:1,,}", ".a[", "def f: 1 f"]:
        assert parse_fast_path(refused) is None, refused
