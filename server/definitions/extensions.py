"""Extensions of the Karta format used only by our own catalog entries (annotations).

A Karta (``run.ai/v1alpha1``) says where one type keeps its pod templates; it cannot say
that a child object is a workload of its own type (a TrainJob's JobSet, an AppWrapper's
PyTorchJob). Two annotations on the definition's ``metadata.annotations`` say so
(docs/definition-format.md, "Extensions"); a definition without them (every third-party
Karta) loads and resolves exactly as before:

* ``workload-map.run.ai/nested``: comma-separated ``<group>/<kind>`` of child kinds
  (core group: ``/<kind>`` or ``<kind>``) resolved through their own definition in force
  and folded into this workload's view (``workload_map.resolution.nesting``);
* ``workload-map.run.ai/nested-standin``: comma-separated child component names that
  stand in for the nested children until one exists (AppWrapper's ``pods``, TrainJob's
  ``trainer``): while a nested child is present they are left out, so its roles, pods and
  spec-side demand are the inner definition's and are counted once.

Components that are not stand-ins keep precedence: an outer component that claims a pod of
a nested child overrides the inner role that pod belongs to.
"""

from __future__ import annotations

from dataclasses import dataclass

from workload_map.definitions.model import Definition
from workload_map.errors import Problem

NESTED_ANNOTATION = "workload-map.run.ai/nested"
STANDIN_ANNOTATION = "workload-map.run.ai/nested-standin"
EXTENSION_ANNOTATIONS = (NESTED_ANNOTATION, STANDIN_ANNOTATION)
_PATH = "metadata.annotations"


@dataclass(frozen=True, slots=True)
class Extensions:
    """The extensions one definition uses.

    Attributes:
        nested: (group, kind) of the child kinds resolved through their own definition.
        standin: child component names left out while a nested child exists.
    """

    nested: tuple[tuple[str, str], ...] = ()
    standin: tuple[str, ...] = ()

    def names(self) -> list[str]:
        """The annotation names in use, in documentation order."""
        used = ((NESTED_ANNOTATION, self.nested), (STANDIN_ANNOTATION, self.standin))
        return [name for name, value in used if value]


def _annotations(definition: Definition) -> dict[str, object]:
    meta = definition.manifest.get("metadata") if isinstance(definition.manifest, dict) else None
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    return annotations if isinstance(annotations, dict) else {}


def _items(value: object) -> list[str]:
    return [item.strip() for item in str(value).split(",") if item.strip()] if value is not None else []


def _group_kind(item: str) -> tuple[str, str]:
    group, _, kind = item.rpartition("/")
    return group, kind


def extensions_of(definition: Definition) -> Extensions:
    """The extensions of ``definition`` (empty for a definition without the annotations).

    Malformed entries are skipped here; :func:`extension_problems` reports them when the
    definition is validated, so a definition in force never holds one.
    """
    annotations = _annotations(definition)
    nested = tuple(_group_kind(i) for i in _items(annotations.get(NESTED_ANNOTATION)) if _group_kind(i)[1])
    return Extensions(nested, tuple(_items(annotations.get(STANDIN_ANNOTATION))))


def extension_problems(definition: Definition) -> list[Problem]:
    """Findings of the extension annotations (empty when unused or valid).

    Rules: every ``nested`` item is ``[group/]Kind`` with a Kind starting with an upper-case
    letter and is not the definition's own kind; ``nested-standin`` needs ``nested`` and
    names child components that carry pods and own no other component.
    """
    annotations = _annotations(definition)
    problems: list[Problem] = []
    nested_items = _items(annotations.get(NESTED_ANNOTATION))
    for item in nested_items:
        group, kind = _group_kind(item)
        if not kind or not kind[0].isupper() or not kind.isalnum():
            problems.append(Problem(f"{_PATH}[{NESTED_ANNOTATION}]",
                                    f'"{item}" is not <group>/<Kind> (a Kind starts with an upper-case letter)'))
        elif (group, kind) == definition.gvk.group_kind:
            problems.append(Problem(f"{_PATH}[{NESTED_ANNOTATION}]", f'"{item}" is the definition\'s own kind'))
    standin = _items(annotations.get(STANDIN_ANNOTATION))
    if standin and not nested_items:
        problems.append(Problem(f"{_PATH}[{STANDIN_ANNOTATION}]", f"needs {NESTED_ANNOTATION}"))
    children = {c.name: c for c in definition.children}
    for name in standin:
        component = children.get(name)
        if component is None:
            problems.append(Problem(f"{_PATH}[{STANDIN_ANNOTATION}]", f'unknown child component "{name}"'))
        elif not component.has_pod_definition or definition.children_of(name):
            problems.append(Problem(f"{_PATH}[{STANDIN_ANNOTATION}]",
                                    f'component "{name}" must carry pods and own no other component'))
    return problems


__all__ = ["EXTENSION_ANNOTATIONS", "NESTED_ANNOTATION", "STANDIN_ANNOTATION", "Extensions", "extension_problems",
           "extensions_of"]
