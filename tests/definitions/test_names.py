"""Strict names and documents: whole-string matches, Kubernetes name rules, format
characters and duplicate YAML/JSON keys, each refused with its field path."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from workload_map.definitions import check_definition, load_documents
from workload_map.definitions.names import (
    dns_label_problem,
    dns_subdomain_problem,
    format_character,
    label_key_problem,
    label_value_problem,
)
from workload_map.errors import InvalidRequest
from tests.definitions.test_validate import BASE

ROOT = "spec.structureDefinition.rootComponent"
CHILD0 = "spec.structureDefinition.childComponents[0]"


def problems_with(mutate: Any) -> list[str]:
    """Problems of BASE after ``mutate`` (BASE alone has none)."""
    doc = copy.deepcopy(BASE)
    mutate(doc)
    return [str(p) for p in check_definition(doc)[1]]


@pytest.mark.parametrize("name, valid", [
    ("demo", True), ("a.b-c.d", True), ("a" * 253, True), ("0abc", True),
    ("x\n", False),           # ``$`` would match before the newline; fullmatch does not
    ("a" * 254, False), ("-a", False), ("a-", False), ("A", False), ("a..b", False), ("a_b", False),
    ("", False), ("a\u202eb", False), ("\u200bdemo", False), ("dem\u00f6", False),
])
def test_dns_subdomain(name: str, valid: bool) -> None:
    assert (dns_subdomain_problem(name) is None) is valid


@pytest.mark.parametrize("name, valid", [
    ("worker", True), ("a" * 63, True), ("w-0", True),
    ("a" * 64, False), ("a.b", False), ("worker\n", False), ("Worker", False), ("wor ker", False),
])
def test_dns_label(name: str, valid: bool) -> None:
    assert (dns_label_problem(name) is None) is valid


@pytest.mark.parametrize("key, valid", [
    ("app", True), ("example.com/app", True), ("A_b.c-d", True), ("a" * 63, True),
    ("gpu\n", False), ("/app", False), ("Example.com/app", False), ("a" * 64, False), ("app_", False),
    ("ex\u202eample.com/app", False),
])
def test_label_keys(key: str, valid: bool) -> None:
    assert (label_key_problem(key) is None) is valid


@pytest.mark.parametrize("value, valid", [
    ("", True), ("v1.2_3-x", True), ("gpu\n", False), ("-x", False), ("a" * 64, False),
])
def test_label_values(value: str, valid: bool) -> None:
    assert (label_value_problem(value) is None) is valid


def test_format_characters_are_named() -> None:
    # U+202E RIGHT-TO-LEFT OVERRIDE and U+200D ZERO WIDTH JOINER are category Cf
    assert format_character("admin\u202etxt.exe") == "U+202E"
    assert format_character("a\u200db") == "U+200D"
    assert format_character("plain") is None
    assert "U+202E" in (dns_subdomain_problem("abc\u202e") or "")


def test_definition_name_with_trailing_newline_is_refused() -> None:
    found = problems_with(lambda d: d["metadata"].update(name="x\n"))
    assert found == ['metadata.name: "x\\n" contains a control character (such as a newline)']


def test_long_definition_name_is_refused_by_the_name_rule() -> None:
    found = problems_with(lambda d: d["metadata"].update(name="a" * 240 + ".b" * 10))
    assert len(found) == 1 and found[0].startswith("metadata.name: ")
    # 240 + 10 * 2 = 260 characters > 253
    assert found[0].endswith("must be at most 253 characters, got 260")


def test_component_names_are_dns_labels() -> None:
    def rename(doc: dict[str, Any]) -> None:
        doc["spec"]["structureDefinition"]["childComponents"][0]["name"] = "lead\u202eer"
        doc["spec"]["structureDefinition"]["childComponents"][1]["ownerRef"] = "root"
    found = problems_with(rename)
    assert found == [f'{CHILD0}.name: component name "lead\\u202eer" contains the invisible format character U+202E '
                     "(bidi controls and other format characters are not allowed)"]
    found = problems_with(lambda d: d["spec"]["structureDefinition"]["rootComponent"].update(name="Root_1"))
    # the children's ownerRef "root" no longer names a component: two more problems
    assert f'{ROOT}.name: component name "Root_1" must be a DNS-1123 label: lowercase letters, digits and \'-\', ' \
           "starting and ending with a letter or digit" in found


def test_match_label_with_trailing_newline_is_refused() -> None:
    def select(doc: dict[str, Any]) -> None:
        doc["spec"]["structureDefinition"]["childComponents"][0]["podSelector"] = {
            "componentTypeSelector": {"matchLabels": {"gpu\n": "yes", "role": "leader\n"}}}
    found = problems_with(select)
    base = f"{CHILD0}.podSelector.componentTypeSelector.matchLabels"
    assert found == [f'{base}: Invalid value: "gpu\\n": contains a control character (such as a newline)',
                     f'{base}.role: Invalid value: "leader\\n": contains a control character (such as a newline)']


def test_duplicate_yaml_keys_are_refused_with_their_path() -> None:
    text = "spec:\n  structureDefinition:\n    rootComponent:\n      name: a\n      name: b\n"
    with pytest.raises(InvalidRequest) as caught:
        load_documents(text)
    assert str(caught.value) == ("spec.structureDefinition.rootComponent.name: duplicate key (lines 4 and 5); "
                                 "each key may appear once in a mapping")


def test_duplicate_keys_in_a_list_item_and_in_json() -> None:
    with pytest.raises(InvalidRequest, match=r"^items\[1\]\.x: duplicate key \(lines 3 and 4\)"):
        load_documents("items:\n- x: 1\n- x: 2\n  x: 3\n")
    with pytest.raises(InvalidRequest, match=r"^a\.b\[0\]\.x: duplicate key \(lines 1 and 1\)"):
        load_documents('{"a": {"b": [{"x": 1, "x": 2}]}}')


def test_distinct_keys_and_aliases_still_load() -> None:
    # 1 (int) and "1" (str) are different keys; an alias is visited once, not re-checked
    assert load_documents('1: a\n"1": b\n') == [{1: "a", "1": "b"}]
    assert load_documents("a: &x {k: 1}\nb: *x\n---\nc: 2\n") == [{"a": {"k": 1}, "b": {"k": 1}}, {"c": 2}]


def test_format_characters_are_refused_in_kinds_and_aliases() -> None:
    import copy

    from workload_map.paths import default_catalog_dir
    from workload_map.definitions.catalog import load_catalog
    from workload_map.definitions.load import check_definition

    doc = copy.deepcopy(load_catalog(default_catalog_dir()).find("jobset").definition.manifest)
    doc["spec"]["structureDefinition"]["rootComponent"]["kind"]["kind"] = "Job\u202eSet"
    doc["metadata"]["annotations"]["workload-map.run.ai/aliases"] = "js,j\u200bs"
    _, problems = check_definition(doc)
    by_path = {p.path: p.message for p in problems}
    root = "spec.structureDefinition.rootComponent.kind.kind"
    assert by_path[root] == '"Job\\u202eSet" contains the invisible format character U+202E (bidi controls and ' \
                            'other format characters are not allowed)'
    assert "U+200B" in by_path["metadata.annotations[workload-map.run.ai/aliases]"]


@pytest.mark.parametrize("name", [5, ["x"], {"a": 1}, True])
def test_a_definition_name_that_is_not_a_string_is_refused(name: Any) -> None:
    # before: a name 5 was taken as "no name" and the definition accepted under its root kind's slug
    found = problems_with(lambda d: d["metadata"].update(name=name))
    assert found == [f"metadata.name: must be a string, got {type(name).__name__}"]
