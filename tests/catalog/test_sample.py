"""The bundled sample snapshot (``server/workload_map/sample``) and the service path over the fixtures.

The sample is what ``wmap serve`` shows without a cluster: several workloads of every catalog
type, copied from the fixtures. It must load, list only top-level workloads, resolve without
errors, and give the same figures as the fixture tests.

The service path (``SnapshotReader`` -> ``WorkloadService``) must give the same views as
``resolve`` with every related object, including owner chains that pass through a pod
(LeaderWorkerSet worker pods are owned by a StatefulSet that the leader pod owns).
"""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest

from workload_map.cli.main import main
from workload_map.definitions.registry import DefinitionRegistry
from workload_map.kube.snapshot import SnapshotReader, load_objects
from workload_map.service.workloads import WorkloadService
from tests.catalog.support import (
    FIXTURES,
    SAMPLE_DIR,
    catalog,
    definition,
    fixture_states,
    load,
    resolve_objects,
    summary,
)

def _roots() -> dict[str, tuple[str, str]]:
    """Root uid -> (slug, state) over every fixture."""
    out = {}
    for entry in catalog():
        for state in fixture_states(entry.definition.name):
            out[load(entry.definition.name, state)[0]["metadata"]["uid"]] = (entry.definition.name, state)
    return out


def _figures(view):  # type: ignore[no-untyped-def]
    s = summary(view)
    return {k: s[k] for k in ("phases", "pods", "gpu", "unattributed", "errors", "instances")} | {
        "roles": {n: (r.desired, r.current, r.ready) for n, r in s["roles"].items()}}


def test_sample_files_and_readme() -> None:
    assert "sample" in (SAMPLE_DIR / "README.md").read_text().lower()
    assert sorted(p.stem for p in SAMPLE_DIR.glob("*.yaml")) == sorted(e.definition.name for e in catalog())


def test_sample_documents_come_from_the_fixtures() -> None:
    fixture_docs = {json.dumps(d, sort_keys=True) for entry in catalog() for state in fixture_states(
        entry.definition.name) for d in load(entry.definition.name, state)}
    for doc in load_objects(SAMPLE_DIR):
        assert json.dumps(doc, sort_keys=True) in fixture_docs, doc["metadata"]["name"]


def test_sample_resolves_every_type_without_errors() -> None:
    reader = SnapshotReader.from_paths(SAMPLE_DIR)
    views = WorkloadService(DefinitionRegistry(catalog()), reader).workloads()
    roots = _roots()
    per_type: collections.Counter[str] = collections.Counter()
    names = set()
    for view in views:
        assert view.uid in roots, f"{view.kind} {view.name} is not a fixture root (not top-level?)"
        slug, state = roots[view.uid]
        per_type[slug] += 1
        names.add((view.namespace, view.kind, view.name))
        assert summary(view)["errors"] == []
        assert _figures(view) == _figures(resolve_objects(definition(slug), load(slug, state)))
    assert set(per_type) == {e.definition.name for e in catalog()}
    assert min(per_type.values()) >= 3
    assert len(names) == len(views)


def test_wmap_describe_the_sample(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["describe", "-f", str(SAMPLE_DIR), "-o", "tree"]) == 0
    captured = capsys.readouterr()
    assert "error" not in captured.err.lower()
    assert "LeaderWorkerSet/vllm-70b" in captured.out and "JobSet/llm-pretrain" in captured.out
    assert main(["describe", "-f", str(SAMPLE_DIR), "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    items = out["items"] if isinstance(out, dict) else out
    assert len(items) >= 60
    assert all(item["errors"] == [] for item in items)


def _service_cases() -> list:  # type: ignore[type-arg]
    cases = []
    for entry in catalog():
        slug = entry.definition.name
        for state in fixture_states(slug):
            cases.append(pytest.param(slug, state, id=f"{slug}/{state}"))
    return cases


@pytest.mark.parametrize(("slug", "state"), _service_cases())
def test_service_path_matches_resolve(slug: str, state: str) -> None:
    reader = SnapshotReader.from_paths(Path(FIXTURES / slug / f"{state}.yaml"))
    views = WorkloadService(DefinitionRegistry(catalog()), reader).workloads()
    root = load(slug, state)[0]
    assert [v.uid for v in views] == [root["metadata"]["uid"]], "exactly the root is a top-level workload"
    assert _figures(views[0]) == _figures(resolve_objects(definition(slug), load(slug, state)))
