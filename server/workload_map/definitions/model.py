"""Typed, immutable model of a Karta definition (``run.ai/v1alpha1`` ``Karta``).

Field meanings are in docs/definition-format.md section 3. jq fields hold the expression source;
every component remembers its field path (``spec.structureDefinition.childComponents[1]``)
so errors found later name where the expression came from.
"""

from __future__ import annotations

import operator
from typing import Any

from msgspec import Struct, field

from workload_map.definitions.phases import Phase
from workload_map.gvk import GVK

#: fragmentedPodSpecDefinition sub-paths, in the order they are read.
FRAGMENT_FIELDS: tuple[str, ...] = (
    "schedulerNamePath",
    "labelsPath",
    "annotationsPath",
    "resourcesPath",
    "resourceClaimsPath",
    "podAffinityPath",
    "nodeAffinityPath",
    "containersPath",
    "containerPath",
    "priorityClassNamePath",
    "imagePath",
)


class SpecDefinition(Struct, frozen=True):
    """Where a component's pods are described; at most one variant is set.

    ``fragments`` maps a :data:`FRAGMENT_FIELDS` name to its jq path.
    """

    pod_template_spec_path: str | None = None
    pod_spec_path: str | None = None
    metadata_path: str | None = None
    fragments: tuple[tuple[str, str], ...] | None = None

    @property
    def variants(self) -> int:
        """How many pod spec variants are set (metadataPath not counted)."""
        return sum(x is not None for x in (self.pod_template_spec_path, self.pod_spec_path, self.fragments))


class ScaleDefinition(Struct, frozen=True):
    """jq paths returning one value per instance: replicas, min and max."""

    replicas_path: str | None = None
    min_replicas_path: str | None = None
    max_replicas_path: str | None = None


class ConditionsDefinition(Struct, frozen=True):
    """Where conditions live and the key names inside each condition."""

    path: str
    type_field: str = "type"
    status_field: str = "status"
    message_field: str = "message"
    reason_field: str = "reason"


class ConditionMatch(Struct, frozen=True):
    """A required condition: ``type`` exists; ``status``/``reason`` equal when given."""

    type: str
    status: str | None = None
    reason: str | None = None


class StatusMatcher(Struct, frozen=True):
    """One matcher; every set criterion must hold (AND). No criterion = always matches."""

    by_phase: str | None = None
    by_conditions: tuple[ConditionMatch, ...] = ()
    by_expression: str | None = None
    expected_result: str | None = None


class StatusDefinition(Struct, frozen=True):
    """How the root object's status maps to phases.

    ``mappings`` is a tuple of ``(phase, matchers)``; matchers of one phase are ORed.
    """

    phase_path: str | None = None
    conditions: ConditionsDefinition | None = None
    mappings: tuple[tuple[Phase, tuple[StatusMatcher, ...]], ...] = ()


class SuspendAction(Struct, frozen=True):
    """Set the value at ``path`` (jq navigation) to the JSON-decoded ``value``."""

    path: str
    value: str


class SuspendDefinition(Struct, frozen=True):
    """Ordered actions that suspend and resume the workload."""

    suspend_actions: tuple[SuspendAction, ...] = ()
    resume_actions: tuple[SuspendAction, ...] = ()


class TypeSelector(Struct, frozen=True):
    """Does a pod belong to a component: ``key_path`` (== ``value`` or non-null) AND labels."""

    key_path: str | None = None
    value: str | None = None
    match_labels: tuple[tuple[str, str], ...] | None = None


class PodSelector(Struct, frozen=True):
    """Pod-side selectors: component type, instance id and replica key (jq on the pod)."""

    type_selector: TypeSelector | None = None
    instance_id_path: str | None = None
    replica_key_path: str | None = None


class Component(Struct, frozen=True):
    """One node of the structure tree.

    Attributes:
        name: unique name; ``kind`` None means a logical grouping component.
        path: field path of this component in the document.
    """

    name: str
    path: str
    kind: GVK | None = None
    owner_ref: str | None = None
    spec: SpecDefinition | None = None
    scale: ScaleDefinition | None = None
    status: StatusDefinition | None = None
    suspend: SuspendDefinition | None = None
    instance_id_path: str | None = None
    pod_selector: PodSelector | None = None

    @property
    def has_pod_definition(self) -> bool:
        """True when the component describes pods (any specDefinition variant)."""
        return self.spec is not None and self.spec.variants > 0


class PodGroupMember(Struct, frozen=True):
    """Alpha gang form: a member component, its grouping keys and filters (jq on pods)."""

    component_name: str
    group_by_key_paths: tuple[str, ...] = ()
    filters: tuple[str, ...] = ()


class PodGroupAlpha(Struct, frozen=True):
    """Deprecated ``podGroups`` entry."""

    name: str
    members: tuple[PodGroupMember, ...] = ()


class Topology(Struct, frozen=True):
    """Topology constraint of a pod group or subgroup."""

    topology_name: str
    preferred_level: str
    required_level: str


class PodGroupSpec(Struct, frozen=True):
    """Current ``podGroup`` form: one pod group with one subgroup per listed component."""

    name: str
    sub_groups: tuple[tuple[str, Topology | None], ...] = ()
    topology: Topology | None = None


class GangScheduling(Struct, frozen=True):
    """``optimizationInstructions.gangScheduling``; consumers prefer ``pod_group``."""

    pod_groups: tuple[PodGroupAlpha, ...] = ()
    pod_group: PodGroupSpec | None = None


class Definition(Struct, frozen=True, eq=False):
    """A parsed definition.

    Attributes:
        name: ``metadata.name`` (defaults to the GVK slug).
        source_format: ``Karta`` or ``ResourceInterface``.
        components: root first, then children in document order.
        manifest: the normalized ``run.ai/v1alpha1`` Karta manifest (dict).
    """

    name: str
    source_format: str
    root: Component
    children: tuple[Component, ...]
    additional_child_kinds: tuple[GVK, ...] = ()
    gang: GangScheduling | None = None
    manifest: dict[str, Any] = field(default_factory=dict)

    def __eq__(self, other: object) -> bool:
        """Equal when every field but ``manifest`` (the source text's parse) is equal.

        Another type gives ``NotImplemented`` (as a dataclass did), so its own ``__eq__`` is asked.
        """
        if other.__class__ is not self.__class__:
            return NotImplemented
        return _compared(self) == _compared(other)

    def __ne__(self, other: object) -> bool:  # msgspec's own != would compare every field
        return not self == other

    def __hash__(self) -> int:
        return hash(_compared(self))

    @property
    def gvk(self) -> GVK:
        """The root component's GVK (the key a definition is registered under)."""
        assert self.root.kind is not None
        return self.root.kind

    @property
    def components(self) -> tuple[Component, ...]:
        """Root first, then children in definition order."""
        return (self.root, *self.children)

    def component(self, name: str) -> Component:
        """The component called ``name``.

        Raises:
            KeyError: no such component.
        """
        for component in self.components:
            if component.name == name:
                return component
        raise KeyError(f"component {name} not found")

    def children_of(self, name: str) -> tuple[Component, ...]:
        """Children whose ownerRef is ``name``, in definition order."""
        return tuple(c for c in self.children if c.owner_ref == name)

    def kinds(self) -> tuple[GVK, ...]:
        """Every GVK the workload involves: root, child components, additionalChildKinds."""
        seen = dict.fromkeys(c.kind for c in self.components if c.kind is not None)
        seen.update(dict.fromkeys(self.additional_child_kinds))
        return tuple(seen)


_compared = operator.attrgetter(*(name for name in Definition.__struct_fields__ if name != "manifest"))
"""The fields a :class:`Definition` is compared and hashed by (every one but ``manifest``), as one tuple."""
