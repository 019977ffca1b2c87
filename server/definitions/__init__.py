"""DEFINITION MODEL (pure): parse, validate and hold Karta definitions; the catalog.

May import ``server.jq``, ``server.gvk``, ``server.errors``; never the Kubernetes client,
starlette or strawberry.
"""

from server.definitions.load import check_definition, load_definition, load_documents
from server.definitions.model import Component, Definition
from server.definitions.phases import Phase, primary_phase

__all__ = ["Component", "Definition", "Phase", "check_definition", "load_definition", "load_documents",
           "primary_phase"]
