"""Extra definition files (WMAP_DEFINITIONS_DIR / the chart's extraDefinitions) load at start."""

from __future__ import annotations

from pathlib import Path

import yaml

from workload_map.app import create_app
from workload_map.config import Settings
from workload_map.kube.snapshot import SnapshotReader

DEMO = {"apiVersion": "run.ai/v1alpha1", "kind": "Karta", "metadata": {"name": "demo"},
        "spec": {"structureDefinition": {"rootComponent": {
            "name": "demo", "kind": {"group": "example.com", "version": "v1", "kind": "Demo"},
            "specDefinition": {"podSpecPath": ".spec.pod"},
            "statusDefinition": {"phaseDefinition": {"path": ".status.state"},
                                 "statusMappings": {"running": [{"byPhase": "up"}]}}}}}}


def test_valid_files_register_and_bad_ones_are_skipped(tmp_path: Path, caplog) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "demo.yaml").write_text(yaml.safe_dump(DEMO))
    (tmp_path / "broken.yaml").write_text("apiVersion: run.ai/v1alpha1\nkind: Karta\nspec: {}\n")
    (tmp_path / "garbage.json").write_text("{not json")
    (tmp_path / "notes.txt").write_text("ignored")
    settings = Settings(definitions_dir=tmp_path, state_dir=tmp_path / "state")
    app = create_app(settings, reader=SnapshotReader())
    registry = app.state.runtime.registry
    entry = next(e for e in registry.entries() if e.definition.name == "demo")
    assert entry.origin == "file" and entry.gvk.kind == "Demo"
    assert len(list(registry.entries())) == len(registry.catalog) + 1  # every catalog entry + demo
    skipped = [r.getMessage() for r in caplog.records if "skipping definition file" in r.getMessage()]
    assert len(skipped) == 2 and any("broken.yaml" in s for s in skipped) and any("garbage.json" in s for s in skipped)
