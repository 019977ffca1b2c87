"""Third-party definitions load and validate, samples resolve, the recorded timeline replays.

Read from ../shared/conformance/upstream (never copied into the project); skipped when absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from workload_map.definitions import Phase, check_definition, load_definition, load_documents
from workload_map.errors import InvalidRequest
from workload_map.gvk import GVK
from workload_map.jq import Document
from workload_map.resolution import resolve
from workload_map.resolution.status import evaluate_status
from tests.conformance.upstream import upstream_definitions_by_gvk, upstream_dir, upstream_files

# The one upstream file we reject, and the real defect that is named in our error.
KNOWN_BROKEN = {"ri-mpijob.yaml": "line 26 column 42: not valid YAML or JSON"}


@pytest.mark.parametrize("path", upstream_files("catalog"), ids=lambda p: p.name)
def test_upstream_definition_validates_or_is_rejected_for_its_real_defect(path: Path) -> None:
    text = path.read_text()
    if path.name in KNOWN_BROKEN:
        # a status mapping and the next key share one line: `status: "False"          running:`
        with pytest.raises(InvalidRequest, match=KNOWN_BROKEN[path.name]):
            load_documents(text, source=path.name)
        return
    docs = load_documents(text, source=path.name)
    assert docs
    for doc in docs:
        definition, problems = check_definition(doc)
        assert problems == [] and definition is not None
        expected = "ResourceInterface" if doc["kind"] == "ResourceInterface" else "Karta"
        assert definition.source_format == expected


def _workload_docs(path: Path) -> list[dict]:  # type: ignore[type-arg]
    return [d for d in load_documents(path.read_text()) if isinstance(d, dict) and "kind" in d]


SAMPLES = [p for p in upstream_files("samples") if "e2e-recorded" not in p.parts]


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_upstream_sample_resolves_with_the_matching_upstream_definition(path: Path) -> None:
    definitions = upstream_definitions_by_gvk()
    resolved = 0
    for obj in _workload_docs(path):
        gvk = GVK.of(obj)
        if gvk not in definitions:
            continue
        definition = load_definition(definitions[gvk].read_text())
        obj.setdefault("metadata", {}).setdefault("uid", f"uid-{obj['metadata'].get('name')}")
        view = resolve(definition, obj)
        # spec-only manifests: no status yet -> nothing reported but the spec side
        errors = [e.message for e in view.errors] + [e.message for c in view.all_components() for e in c.errors]
        assert errors == [], errors
        assert view.replicas.desired >= 1
        resolved += 1
    assert resolved >= 1, f"no workload in {path.name} has an upstream definition"


def test_recorded_jobset_timeline_replays_with_the_upstream_definition() -> None:
    base = upstream_dir()
    recording = load_documents((base / "samples/e2e-recorded/jobset/recorded-v1.34.0-resumed.yaml").read_text())[0]
    definition = load_definition((base / "catalog/jobset-x-k8s-io-jobset-v1alpha2.yaml").read_text())
    frames = [e for e in recording["events"] if e["kind"] == "STATE"]
    assert len(frames) == 6
    for frame in frames:
        result = evaluate_status(definition.root.status, Document(frame["object"]))  # type: ignore[arg-type]
        assert Phase(frame["state"]) in result.phases
        # the recorder stored the same set of matched phases
        assert sorted(p.value for p in result.phases) == sorted(frame["phases"])
