"""DEFINITION MODEL (pure): parse, validate and hold Karta definitions; the catalog.

May import ``workload_map.jq``, ``workload_map.gvk``, ``workload_map.errors``; never the Kubernetes client,
starlette or strawberry.

The names below are loaded on first use (PEP 562 module ``__getattr__``), so importing one
small submodule (``workload_map.definitions.phases`` for the CLI's help text) does not load the
YAML parser, the model and the jq engine.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workload_map.definitions.load import check_definition, load_definition, load_documents
    from workload_map.definitions.model import Component, Definition
    from workload_map.definitions.phases import Phase, primary_phase

_SOURCES = {
    "check_definition": "load", "load_definition": "load", "load_documents": "load",
    "Component": "model", "Definition": "model",
    "Phase": "phases", "primary_phase": "phases",
}

__all__ = ["Component", "Definition", "Phase", "check_definition", "load_definition", "load_documents",
           "primary_phase"]


def __getattr__(name: str) -> Any:
    """``workload_map.definitions.<name>`` of the names above, imported from their submodule on first use."""
    module = _SOURCES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
