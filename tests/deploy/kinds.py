"""The kinds the server watches, read from the built-in catalog (``catalog/*.yaml``).

The server watches every kind a definition names (root component, child components,
``additionalChildKinds``), plus ``v1 Pod`` and ``run.ai/v1alpha1 Karta`` (and
CustomResourceDefinitions). The chart's ClusterRoles must cover all of them.
"""

from __future__ import annotations

from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
CATALOG_DIR = REPO_ROOT / "catalog"

GVK = tuple[str, str, str]
POD: GVK = ("", "v1", "Pod")
KARTA: GVK = ("run.ai", "v1alpha1", "Karta")


def catalog_documents() -> list[tuple[str, dict]]:
    """``(file name, document)`` for every YAML document of ``catalog/*.yaml``."""
    out = []
    for path in sorted(CATALOG_DIR.glob("*.yaml")):
        out += [(path.name, doc) for doc in yaml.safe_load_all(path.read_text()) if doc]
    return out


def definition_gvks(doc: dict) -> set[GVK]:
    """Every GVK a Karta document names (components with a kind, additionalChildKinds)."""
    structure = doc["spec"]["structureDefinition"]
    components = [structure["rootComponent"], *(structure.get("childComponents") or [])]
    kinds = [c["kind"] for c in components if c.get("kind")]
    kinds += structure.get("additionalChildKinds") or []
    return {(k.get("group", ""), k["version"], k["kind"]) for k in kinds}


def catalog_gvks() -> set[GVK]:
    """The GVKs of the whole catalog."""
    return set().union(*(definition_gvks(doc) for _, doc in catalog_documents()))


#: Catalog kinds whose CRD declares a plural other than the guess (spec.names.plural of the CRD).
CRD_PLURALS = {"Sandbox": "sandboxes"}


def guess_plural(kind: str) -> str:
    """The resource name Kubernetes guesses for a kind (apimachinery ``UnsafeGuessKindToResource``):
    lower case, then ``-s`` -> ``-ses``, ``-y`` -> ``-ies``, else ``+s``. CRDs may choose another plural
    (``CRD_PLURALS``); the cluster tests use discovery instead where the test API server serves the kind."""
    if kind in CRD_PLURALS:
        return CRD_PLURALS[kind]
    name = kind.lower()
    if name.endswith("s"):
        return name + "es"
    if name.endswith("y"):
        return name[:-1] + "ies"
    return name + "s"


def watched_gvks() -> set[GVK]:
    """Everything the server watches with the built-in catalog."""
    return catalog_gvks() | {POD, KARTA}
