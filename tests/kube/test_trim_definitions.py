"""Trimming keeps every field the catalog definitions read, for every catalog type.

The cache trims what it holds (``workload_map.kube.trim``): workload roots and their child objects
keep every field (minus managedFields and the last-applied annotation), because the
definitions' jq paths may read any of them; pods keep only what our own code reads plus
what pod-directed jq reads (``podSelector`` and gang paths run on pod manifests).

For every fixture of every catalog definition (tests/fixtures/objects, at least three
states each):

1. every non-pod object survives trimming whole (the definition may read any field);
2. every pod-directed jq expression of the definition gives the same outputs on the
   trimmed pod as on the pod as written;
3. the view resolved from the trimmed (and compacted) objects equals the view resolved
   from the objects as written, field for field (``to_dict``).
"""

from __future__ import annotations

from typing import Any

import pytest

from workload_map.definitions.model import Definition
from workload_map.gvk import GVK
from workload_map.jq.engine import compile_program
from workload_map.kube.trim import LAST_APPLIED, trim
from tests.catalog.support import catalog, definition, fixture_states, is_pod, load, resolve_objects

SLUGS = sorted(e.definition.name for e in catalog())
CASES = [(slug, state) for slug in SLUGS for state in fixture_states(slug)]


def pod_expressions(defn: Definition) -> list[str]:
    """The jq expressions of ``defn`` that run against pod manifests."""
    found: list[str] = []
    for component in defn.components:
        selector = component.pod_selector
        if selector is None:
            continue
        if selector.type_selector is not None and selector.type_selector.key_path:
            found.append(selector.type_selector.key_path)
        found += [p for p in (selector.instance_id_path, selector.replica_key_path) if p]
    if defn.gang is not None:
        for group in defn.gang.pod_groups:
            for member in group.members:
                found += [*member.group_by_key_paths, *member.filters]
    return found


def _without_server_noise(obj: dict[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
    if LAST_APPLIED in (meta.get("annotations") or {}):
        meta["annotations"] = {k: v for k, v in meta["annotations"].items() if k != LAST_APPLIED}
    return {**obj, "metadata": meta}


def test_the_catalog_reads_pods_through_jq() -> None:
    # the check below is not vacuous: most catalog types select pods by label paths
    with_paths = [slug for slug in SLUGS if pod_expressions(definition(slug))]
    assert len(with_paths) >= 20, with_paths


@pytest.mark.parametrize(("slug", "state"), CASES)
def test_trimming_keeps_what_the_definition_reads(slug: str, state: str) -> None:
    defn = definition(slug)
    docs = load(slug, state)
    trimmed = [trim(GVK.of(d), d) for d in docs]
    expressions = [compile_program(e) for e in pod_expressions(defn)]
    pods = 0
    for raw, kept in zip(docs, trimmed, strict=True):
        if not is_pod(raw):
            assert kept == _without_server_noise(raw), f"{GVK.of(raw)} {raw['metadata']['name']} lost fields"
            continue
        pods += 1
        for program in expressions:
            assert program.all(kept) == program.all(raw), (program, raw["metadata"]["name"])
    full_view = resolve_objects(defn, docs)
    trimmed_view = resolve_objects(defn, trimmed)
    assert trimmed_view.to_dict() == full_view.to_dict()
    # the fixture resolves to something: its pods are counted in both views alike
    assert trimmed_view.replicas.current == full_view.replicas.current <= pods


def test_a_registered_pod_definition_reads_condition_times_of_its_standalone_pod() -> None:
    # a user's Karta for pods maps Running by the Ready condition's lastTransitionTime (found by a
    # review: pod conditions are trimmed to type/status/reason/message, but a pod no controller
    # owns is a workload root and is kept whole)
    import copy

    import yaml

    from workload_map.definitions.load import load_definition
    from tests.catalog.support import CATALOG_DIR

    manifest = yaml.safe_load((CATALOG_DIR / "core-pod-v1.yaml").read_text(encoding="utf-8"))
    manifest = copy.deepcopy(manifest)
    manifest["metadata"]["name"] = "my-pod-v1"
    mappings = manifest["spec"]["structureDefinition"]["rootComponent"]["statusDefinition"]["statusMappings"]
    mappings["running"] = [{"byExpression": {
        "expression": '[.status.conditions[]? | select(.type == "Ready") | .lastTransitionTime // empty] | length > 0',
        "expectedResult": "true"}}]
    mappings.pop("initializing", None)
    defn = load_definition(manifest)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "nb", "namespace": "notebooks", "uid": "u-nb"},
           "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
           "status": {"phase": "Pending", "conditions": [
               {"type": "Ready", "status": "False", "lastTransitionTime": "2026-12-01T00:00:00Z"}]}}
    view = resolve_objects(defn, [trim(GVK.of(pod), pod)])
    assert view.phase.value == "Running"
    assert resolve_objects(defn, [pod]).phase.value == "Running"
