"""Every validation rule, each finding named by its field path."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from workload_map.definitions import check_definition, load_definition
from workload_map.errors import InvalidDefinition, InvalidRequest

BASE: dict[str, Any] = {
    "apiVersion": "run.ai/v1alpha1",
    "kind": "Karta",
    "metadata": {"name": "demo"},
    "spec": {"structureDefinition": {
        "rootComponent": {
            "name": "root",
            "kind": {"group": "example.com", "version": "v1", "kind": "Demo"},
            "statusDefinition": {"conditionsDefinition": {"path": ".status.conditions"},
                                 "phaseDefinition": {"path": ".status.phase"},
                                 "statusMappings": {"running": [{"byPhase": "Running"}]}},
        },
        "childComponents": [
            {"name": "leader", "ownerRef": "root", "kind": {"group": "", "version": "v1", "kind": "Pod"},
             "specDefinition": {"podTemplateSpecPath": ".spec.leader.template"}},
            {"name": "worker", "ownerRef": "root", "instanceIdPath": ".spec.workers[].name",
             "specDefinition": {"podTemplateSpecPath": ".spec.workers[].template"},
             "podSelector": {"componentInstanceSelector": {"idPath": ".metadata.labels.group"}}},
        ],
    }},
}


def problems_of(mutate: Any) -> list[str]:
    doc = copy.deepcopy(BASE)
    mutate(doc)
    definition, problems = check_definition(doc)
    assert definition is None
    return [str(p) for p in problems]


def structure(doc: dict[str, Any]) -> dict[str, Any]:
    return doc["spec"]["structureDefinition"]  # type: ignore[no-any-return]


def test_base_is_valid() -> None:
    definition = load_definition(copy.deepcopy(BASE))
    assert [c.name for c in definition.components] == ["root", "leader", "worker"]
    assert definition.gvk.kind == "Demo"


def test_unknown_owner_ref_names_field_and_component() -> None:
    def mutate(doc: dict[str, Any]) -> None:
        structure(doc)["childComponents"][1]["ownerRef"] = "wrker"
    assert problems_of(mutate) == ['spec.structureDefinition.childComponents[1].ownerRef: unknown component "wrker"']


def test_duplicate_names() -> None:
    def mutate(doc: dict[str, Any]) -> None:
        structure(doc)["childComponents"][1]["name"] = "leader"
    assert "spec.structureDefinition.childComponents[1].name: component name leader is not unique" in problems_of(mutate)


def test_root_rules_are_all_reported_at_once() -> None:
    def mutate(doc: dict[str, Any]) -> None:
        root = structure(doc)["rootComponent"]
        root["kind"] = {"group": "x", "version": "", "kind": "Demo"}
        root["ownerRef"] = ""
        del root["statusDefinition"]
        structure(doc)["childComponents"][0]["ownerRef"] = None
    found = problems_of(mutate)
    assert "spec.structureDefinition.rootComponent.kind: root component must have full kind (group, version, kind)" \
        in found or any("rootComponent.kind.version" in f for f in found)
    assert "spec.structureDefinition.rootComponent.ownerRef: root component cannot have owner ref" in found
    assert ("spec.structureDefinition.rootComponent.statusDefinition: root component must have status definition"
            in found)
    assert "spec.structureDefinition.childComponents[0].ownerRef: child component 'leader' has no owner ref" in found


def test_cycle_detected() -> None:
    def mutate(doc: dict[str, Any]) -> None:
        structure(doc)["childComponents"][0]["ownerRef"] = "worker"
        structure(doc)["childComponents"][1]["ownerRef"] = "leader"
    found = problems_of(mutate)
    assert len(found) == 1 and "ownership cycle detected involving component" in found[0]


def test_exactly_one_spec_variant() -> None:
    def mutate(doc: dict[str, Any]) -> None:
        structure(doc)["childComponents"][0]["specDefinition"]["podSpecPath"] = ".spec.leader.template.spec"
    assert problems_of(mutate) == [
        "spec.structureDefinition.childComponents[0].specDefinition: component 'leader' has multiple pod spec definitions"]


def test_instance_ids_and_instance_selector_come_together() -> None:
    def drop_selector(doc: dict[str, Any]) -> None:
        del structure(doc)["childComponents"][1]["podSelector"]
    assert problems_of(drop_selector) == [
        "spec.structureDefinition.childComponents[1].instanceIdPath: component 'worker' has instance id path but no "
        "pod component instance selector"]

    def drop_ids(doc: dict[str, Any]) -> None:
        del structure(doc)["childComponents"][1]["instanceIdPath"]
    assert problems_of(drop_ids) == [
        "spec.structureDefinition.childComponents[1].podSelector.componentInstanceSelector: component 'worker' has "
        "pod component instance selector but no instance id path"]


def test_type_selector_rules() -> None:
    def mutate(doc: dict[str, Any]) -> None:
        structure(doc)["childComponents"][0]["podSelector"] = {"componentTypeSelector": {
            "value": "x", "matchLabels": {"app name": "ok", "good": "bad value!"}}}
    found = problems_of(mutate)
    base = "spec.structureDefinition.childComponents[0].podSelector.componentTypeSelector"
    assert f"{base}.value: value without keyPath" in found
    assert any(f.startswith(f"{base}.matchLabels: Invalid value: \"app name\"") for f in found)
    assert any(f.startswith(f'{base}.matchLabels.good: Invalid value: "bad value!": not a valid label value') for f in found)

    def neither(doc: dict[str, Any]) -> None:
        structure(doc)["childComponents"][0]["podSelector"] = {"componentTypeSelector": {}}
    assert problems_of(neither) == [f"{base}: neither keyPath nor matchLabels is set; at least one is required"]


def test_mappings_need_their_definitions() -> None:
    def mutate(doc: dict[str, Any]) -> None:
        status = structure(doc)["rootComponent"]["statusDefinition"]
        del status["conditionsDefinition"], status["phaseDefinition"]
        status["statusMappings"] = {"running": [{"byPhase": "Running"}],
                                    "failed": [{"byConditions": [{"type": "Failed", "status": "True"}]}]}
    base = "spec.structureDefinition.rootComponent.statusDefinition.statusMappings"
    assert sorted(problems_of(mutate)) == [
        f"{base}.failed[0].byConditions: byConditions needs statusDefinition.conditionsDefinition",
        f"{base}.running[0].byPhase: byPhase needs statusDefinition.phaseDefinition"]


def test_gang_members_must_exist_in_both_forms() -> None:
    def mutate(doc: dict[str, Any]) -> None:
        doc["spec"]["optimizationInstructions"] = {"gangScheduling": {
            "podGroups": [{"name": "g", "members": [{"componentName": "ghost"}]}],
            "podGroup": {"name": "pg", "subGroups": [{"componentName": "phantom"}]}}}
    found = problems_of(mutate)
    base = "spec.optimizationInstructions.gangScheduling"
    assert (f"{base}.podGroups[0].members[0].componentName: pod-group member component 'ghost' is not defined "
            "(should be a root or child component)") in found
    assert f'{base}.podGroup.subGroups[0].componentName: unknown component "phantom"' in found


def test_jq_problems_name_the_field() -> None:
    def mutate(doc: dict[str, Any]) -> None:
        structure(doc)["childComponents"][0]["specDefinition"]["podTemplateSpecPath"] = ".spec | del(.x)"
        structure(doc)["rootComponent"]["statusDefinition"]["statusMappings"]["failed"] = [
            {"byExpression": {"expression": "[.. | .x]", "expectedResult": "true"}}]
        structure(doc)["childComponents"][1]["instanceIdPath"] = ".spec.workers[.name"
    found = problems_of(mutate)
    assert ("spec.structureDefinition.childComponents[0].specDefinition.podTemplateSpecPath: jq expression "
            "failed validation: del function is not allowed") in found
    assert any(f.startswith("spec.structureDefinition.rootComponent.statusDefinition.statusMappings.failed[0]"
                            ".byExpression.expression: jq expression failed validation: recursive")
               for f in found)
    assert any(f.startswith("spec.structureDefinition.childComponents[1].instanceIdPath: jq expression failed to "
                            "parse") for f in found)


def test_an_expression_over_the_length_limit_is_refused_without_compiling() -> None:
    # 16,387 characters (".a" x 8,192 plus "| ."): one problem naming the field and both lengths;
    # 400 KB of ".a" took jq's compiler 4-5 s holding the GIL (the event loop with it)
    long = ".a" * 8_192 + "| ."
    assert len(long) == 16_387

    def mutate(doc: dict[str, Any]) -> None:
        structure(doc)["childComponents"][1]["instanceIdPath"] = long
    assert ("spec.structureDefinition.childComponents[1].instanceIdPath: jq expression failed validation: "
            "the expression is 16,387 characters long; at most 16,384 are allowed") in problems_of(mutate)

    at_limit = copy.deepcopy(BASE)
    structure(at_limit)["childComponents"][1]["instanceIdPath"] = ".a" * 8_192  # 16,384: accepted
    definition, problems = check_definition(at_limit)
    assert definition is not None and not problems


def test_wrong_types_unknown_fields_and_suspend_values() -> None:
    def mutate(doc: dict[str, Any]) -> None:
        structure(doc)["childComponents"][0]["fragmentedPodDefinition"] = {}
        structure(doc)["childComponents"][0]["scaleDefinition"] = {"replicasPath": 3}
        structure(doc)["rootComponent"]["suspendDefinition"] = {"suspendActions": [{"path": ".spec.suspend",
                                                                                    "value": "yes"}]}
    found = problems_of(mutate)
    assert "spec.structureDefinition.childComponents[0].fragmentedPodDefinition: unknown field" in found
    assert "spec.structureDefinition.childComponents[0].scaleDefinition.replicasPath: must be a string, got number" \
        in found
    assert ("spec.structureDefinition.rootComponent.suspendDefinition.suspendActions[0].value: must be a "
            "JSON-encoded value, got 'yes'") in found


def test_load_definition_raises_with_every_problem() -> None:
    doc = copy.deepcopy(BASE)
    structure(doc)["childComponents"][0]["ownerRef"] = "nobody"
    structure(doc)["childComponents"][1]["ownerRef"] = "nobody2"
    with pytest.raises(InvalidDefinition) as error:
        load_definition(doc)
    assert len(error.value.problems) == 2 and error.value.name == "demo"


def test_text_input_and_legacy_and_bare_spec_forms() -> None:
    text = "apiVersion: optimization.nvidia.com/v1alpha1\nkind: ResourceInterface\n" \
           "metadata: {name: legacy}\nspec:\n  structureDefinition:\n    rootComponent:\n      name: r\n" \
           "      kind: {group: g.io, version: v1, kind: K}\n      statusDefinition:\n" \
           "        phaseDefinition: {path: .status.phase}\n        statusMappings: {running: [{byPhase: Up}]}\n"
    definition = load_definition(text)
    assert definition.source_format == "ResourceInterface"
    assert definition.manifest["apiVersion"] == "run.ai/v1alpha1" and definition.manifest["kind"] == "Karta"
    bare = load_definition(copy.deepcopy(BASE["spec"]))
    assert bare.name == "example-com-demo-v1"
    with pytest.raises(InvalidRequest, match="not valid YAML"):
        load_definition("a: [")
    with pytest.raises(InvalidDefinition, match="expected apiVersion run.ai/v1alpha1 kind Karta"):
        load_definition({"apiVersion": "v1", "kind": "ConfigMap"})


def test_registration_trial_names_the_non_terminating_field() -> None:
    from workload_map.materialization.trial import check_termination_blocking as check_termination

    doc = copy.deepcopy(BASE)
    structure(doc)["childComponents"][0]["scaleDefinition"] = {"replicasPath": "def f: f; f"}
    definition = load_definition(doc)  # passes the static checks
    problems = check_termination(definition, [{"spec": {}}], timeout=2)  # one worker job per expression
    assert [p.path for p in problems] == ["spec.structureDefinition.childComponents[0].scaleDefinition.replicasPath"]
    assert problems[0].message.startswith("jq expression did not finish within ")
    assert check_termination(load_definition(copy.deepcopy(BASE)), timeout=5) == []


@pytest.mark.parametrize("bad", [{"apiVersion": {"a": 1}, "kind": "Karta"}, {"apiVersion": "run.ai/v1alpha1",
                                                                            "kind": ["Karta"]}, [1, 2], "text", 5])
def test_non_string_identity_fields_are_problems_not_crashes(bad: object) -> None:
    definition, problems = check_definition(bad)
    assert definition is None and len(problems) == 1


def test_registration_trial_refuses_crashing_and_slow_expressions() -> None:
    from workload_map.materialization.trial import trial_reasons_blocking as trial_reasons

    # a runaway recursion aborts the jq library (out of memory) or runs out the clock
    reasons = trial_reasons(["def f: 1 + f; f", ".ok"], [{}], timeout=3)
    assert list(reasons) == ["def f: 1 + f; f"]
    assert reasons["def f: 1 + f; f"].startswith(("crashed the jq evaluator", "did not finish within"))
    # terminates, but one evaluation costs far more than a navigation path may
    slow = "reduce limit(300000; repeat(.)) as $x (0; . + 1)"
    assert trial_reasons([slow], [{}], timeout=20, per_evaluation=0.01)[slow].startswith("one evaluation took ")
