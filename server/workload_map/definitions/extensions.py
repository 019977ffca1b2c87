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

* ``workload-map.run.ai/nested-templates``: a jq expression over the root giving the objects
  it will create, as embedded templates (AppWrapper's ``.spec.components[].template``); while
  no nested child exists, each of a nested kind is resolved as a would-be child through its
  own definition (no pods yet), so queued work shows its roles and demand;
* ``workload-map.run.ai/live-scale``: components whose children an autoscaler scales
  (``workload_map.resolution.livescale`` reads them); parsed and checked here, so that
  ``wmap validate`` and registration refuse an entry the resolver could not apply;
* ``workload-map.run.ai/failing-children`` (child kinds whose ``FailureTarget``/``Failed``
  condition marks a failing child) and ``workload-map.run.ai/degraded-when`` (a jq
  expression over the root giving messages of counts that do not add up): evidence of a
  Degraded workload (``workload_map.resolution.degraded``); ``workload-map.run.ai/unknown-when``
  (a jq expression giving messages of why the workload cannot be read, such as a missing
  runtime it takes its structure from): its phase is Undefined with those reasons.

Any other ``workload-map.run.ai/`` annotation key than those and the server's own
(:data:`OWN_ANNOTATIONS`) is refused as a misspelt extension.
"""

from __future__ import annotations

from msgspec import Struct

from workload_map.definitions.model import Definition
from workload_map.errors import Problem

NESTED_ANNOTATION = "workload-map.run.ai/nested"
STANDIN_ANNOTATION = "workload-map.run.ai/nested-standin"
LIVE_SCALE_ANNOTATION = "workload-map.run.ai/live-scale"
TEMPLATES_ANNOTATION = "workload-map.run.ai/nested-templates"
FAILING_CHILDREN_ANNOTATION = "workload-map.run.ai/failing-children"
DEGRADED_WHEN_ANNOTATION = "workload-map.run.ai/degraded-when"
UNKNOWN_WHEN_ANNOTATION = "workload-map.run.ai/unknown-when"
EXTENSION_ANNOTATIONS = (NESTED_ANNOTATION, STANDIN_ANNOTATION, TEMPLATES_ANNOTATION, LIVE_SCALE_ANNOTATION,
                         FAILING_CHILDREN_ANNOTATION, DEGRADED_WHEN_ANNOTATION, UNKNOWN_WHEN_ANNOTATION)
#: Extensions whose value is a jq expression over the root object (checked and trialled as every jq field).
JQ_ANNOTATIONS = (TEMPLATES_ANNOTATION, DEGRADED_WHEN_ANNOTATION, UNKNOWN_WHEN_ANNOTATION)
#: Annotations of our prefix that are not extensions: catalog metadata and what the server stamps.
OWN_ANNOTATIONS = frozenset({"workload-map.run.ai/aliases", "workload-map.run.ai/source-version",
                             "workload-map.run.ai/registered-at", "workload-map.run.ai/workload-type",
                             "workload-map.run.ai/resource-interface"})
_PREFIX = "workload-map.run.ai/"
_PATH = "metadata.annotations"

GroupKind = tuple[str, str]
#: Child kinds whose live replica count ``live-scale`` can read (the resolver has a reader each).
LIVE_SCALE_KINDS: frozenset[GroupKind] = frozenset({
    ("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "ReplicaSet"),
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"), ("grove.io", "PodClique"), ("ray.io", "RayCluster")})


class Extensions(Struct, frozen=True):
    """The extensions one definition uses.

    Attributes:
        nested: (group, kind) of the child kinds resolved through their own definition.
        standin: child component names left out while a nested child exists.
        live_scale: component names whose children's live replicas win over the template.
        templates: the jq expression giving the would-be children ("" when unused).
    """

    nested: tuple[tuple[str, str], ...] = ()
    standin: tuple[str, ...] = ()
    live_scale: tuple[str, ...] = ()
    templates: str = ""

    def names(self) -> list[str]:
        """The annotation names in use, in documentation order."""
        used = ((NESTED_ANNOTATION, self.nested), (STANDIN_ANNOTATION, self.standin),
                (TEMPLATES_ANNOTATION, self.templates), (LIVE_SCALE_ANNOTATION, self.live_scale))
        return [name for name, value in used if value]


def annotations_of(definition: Definition) -> dict[str, object]:
    """The ``metadata.annotations`` of ``definition``'s manifest ({} when it has none or they are not a map)."""
    return _metadata_map(definition, "annotations")


def labels_of(definition: Definition) -> dict[str, object]:
    """The ``metadata.labels`` of ``definition``'s manifest ({} when it has none or they are not a map)."""
    return _metadata_map(definition, "labels")


def _metadata_map(definition: Definition, key: str) -> dict[str, object]:
    meta = definition.manifest.get("metadata") if isinstance(definition.manifest, dict) else None
    found = meta.get(key) if isinstance(meta, dict) else None
    return found if isinstance(found, dict) else {}


def annotation(definition: Definition, key: str) -> str:
    """The stripped text of annotation ``key`` of ``definition`` ("" when absent)."""
    value = annotations_of(definition).get(key)
    return str(value).strip() if value is not None else ""


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
    annotations = annotations_of(definition)
    nested = tuple(_group_kind(i) for i in _items(annotations.get(NESTED_ANNOTATION)) if _group_kind(i)[1])
    return Extensions(nested, tuple(_items(annotations.get(STANDIN_ANNOTATION))),
                      _live_scale_names(annotations.get(LIVE_SCALE_ANNOTATION)),
                      str(annotations.get(TEMPLATES_ANNOTATION) or "").strip())


def _live_scale_names(text: object) -> tuple[str, ...]:
    """The component names of a ``live-scale`` value (no checks: called on every resolution)."""
    return tuple(n for n in (e.partition("=")[0].strip() for e in str(text or "").split(",")) if n)


def live_scale_entries(definition: Definition) -> tuple[dict[str, frozenset[GroupKind]], list[str]]:
    """The ``live-scale`` annotation parsed: ``(component -> child kinds, problems)``.

    Grammar: entries separated by commas, each ``component`` (children of the component's
    own kind) or ``component=Kind.group|Kind.group`` (the core group is ``Kind``). An entry is
    a problem (and left out) when the component does not exist, is the root or a logical
    component without explicit kinds, or names a kind outside :data:`LIVE_SCALE_KINDS`.
    """
    text = annotations_of(definition).get(LIVE_SCALE_ANNOTATION)
    kinds: dict[str, frozenset[GroupKind]] = {}
    problems: list[str] = []
    if text is not None and not str(text).strip():
        problems.append("live-scale entry '': names no component")
    for entry in str(text or "").split(","):
        name, _, listed = (part.strip() for part in entry.partition("="))
        if not name:
            continue
        try:
            kinds[name] = _entry_kinds(definition, name, listed)
        except ValueError as exc:
            problems.append(f"live-scale entry {entry.strip()!r}: {exc}")
    return kinds, problems


def _entry_kinds(definition: Definition, name: str, listed: str) -> frozenset[GroupKind]:
    try:
        component = definition.component(name)
    except KeyError:
        raise ValueError(f"no component named {name}") from None
    if listed:
        found = frozenset((group, kind) for kind, _, group in (k.strip().partition(".") for k in listed.split("|")))
    elif component.kind is None or component is definition.root:
        raise ValueError("the root or a logical component needs its child kinds (component=Kind.group)")
    else:
        found = frozenset({component.kind.group_kind})
    unread = sorted(f"{k}.{g}".rstrip(".") for g, k in found if (g, k) not in LIVE_SCALE_KINDS)
    if unread:
        raise ValueError(f"the replicas of {', '.join(unread)} are not read (readable: "
                         f"{', '.join(sorted(f'{k}.{g}' for g, k in LIVE_SCALE_KINDS))})")
    return found


def extension_problems(definition: Definition) -> list[Problem]:
    """Findings of the extension annotations (empty when unused or valid).

    Rules: every ``nested`` item is ``[group/]Kind`` with a Kind starting with an upper-case
    letter and is not the definition's own kind; ``nested-standin`` needs ``nested`` and
    names child components that carry pods and own no other component; every ``live-scale``
    entry applies (:func:`live_scale_entries`); no other key of the ``workload-map.run.ai/``
    prefix than the extensions and :data:`OWN_ANNOTATIONS`.
    """
    annotations = annotations_of(definition)
    problems: list[Problem] = []
    for key in sorted(str(k) for k in annotations):
        if key.startswith(_PREFIX) and key not in EXTENSION_ANNOTATIONS and key not in OWN_ANNOTATIONS:
            problems.append(Problem(f"{_PATH}[{key}]", f"unknown extension annotation (known: "
                                                      f"{', '.join(EXTENSION_ANNOTATIONS)})"))
    problems += [Problem(f"{_PATH}[{LIVE_SCALE_ANNOTATION}]", m) for m in live_scale_entries(definition)[1]]
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
    templates = annotations.get(TEMPLATES_ANNOTATION)
    if templates is not None and not nested_items:
        problems.append(Problem(f"{_PATH}[{TEMPLATES_ANNOTATION}]", f"needs {NESTED_ANNOTATION}"))
    elif templates is not None and not str(templates).strip():
        problems.append(Problem(f"{_PATH}[{TEMPLATES_ANNOTATION}]", "is empty (a jq expression giving objects)"))
    for key in (FAILING_CHILDREN_ANNOTATION, DEGRADED_WHEN_ANNOTATION, UNKNOWN_WHEN_ANNOTATION):
        if key in annotations and not annotation(definition, key):
            problems.append(Problem(f"{_PATH}[{key}]", "is empty"))
    children = {c.name: c for c in definition.children}
    for name in standin:
        component = children.get(name)
        if component is None:
            problems.append(Problem(f"{_PATH}[{STANDIN_ANNOTATION}]", f'unknown child component "{name}"'))
        elif not component.has_pod_definition or definition.children_of(name):
            problems.append(Problem(f"{_PATH}[{STANDIN_ANNOTATION}]",
                                    f'component "{name}" must carry pods and own no other component'))
    return problems


__all__ = ["DEGRADED_WHEN_ANNOTATION", "EXTENSION_ANNOTATIONS", "FAILING_CHILDREN_ANNOTATION", "annotation", "LIVE_SCALE_ANNOTATION", "LIVE_SCALE_KINDS", "NESTED_ANNOTATION",
           "OWN_ANNOTATIONS", "STANDIN_ANNOTATION", "TEMPLATES_ANNOTATION", "UNKNOWN_WHEN_ANNOTATION", "Extensions", "extension_problems", "extensions_of",
           "live_scale_entries"]
