"""Locating the third-party conformance data in ../shared (skip cleanly when absent)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from workload_map.definitions import load_documents
from workload_map.gvk import GVK


def shared_dir() -> Path:
    """``$WMAP_SHARED_DIR``, else ``../shared`` next to the repository."""
    return Path(os.environ.get("WMAP_SHARED_DIR") or Path(__file__).resolve().parents[2].parent / "shared")


def upstream_dir() -> Path:
    """The upstream conformance folder; skips the calling test when it is absent."""
    path = shared_dir() / "conformance" / "upstream"
    if not path.is_dir():
        pytest.skip(f"conformance data not present ({path}); tests read it from ../shared only")
    return path


def upstream_files(sub: str) -> list[Path]:
    """Sorted YAML files under ``upstream/<sub>`` (empty list when absent: no tests generated)."""
    path = shared_dir() / "conformance" / "upstream" / sub
    return sorted(path.rglob("*.yaml")) if path.is_dir() else []


def upstream_definitions_by_gvk() -> dict[GVK, Path]:
    """Primary upstream catalog files (top folder only) keyed by root GVK."""
    out: dict[GVK, Path] = {}
    for path in upstream_files("catalog"):
        if path.parent.name != "catalog":
            continue
        for doc in load_documents(path.read_text()):
            kind = doc["spec"]["structureDefinition"]["rootComponent"]["kind"]
            out[GVK(kind.get("group", ""), kind["version"], kind["kind"])] = path
    return out
