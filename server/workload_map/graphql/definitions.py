"""GraphQL types for definitions and their registration results.

The registration itself, with its guards, is ``workload_map.registration.registrar``, shared with REST.
"""

from __future__ import annotations

import strawberry
from strawberry.scalars import JSON

from workload_map.definitions.registry import Entry
from workload_map.errors import Problem as ProblemValue
from workload_map.registration.following import Skipped

@strawberry.type(description="A definition in force (or registered but shadowed).")
class Definition:
    """Adapter over :class:`workload_map.definitions.registry.Entry`."""

    entry: strawberry.Private[Entry]

    @strawberry.field(description="metadata.name (the catalog slug for built-in definitions).")
    def name(self) -> str:
        """Definition name."""
        return self.entry.definition.name

    @strawberry.field(description="Root GVK group (empty for core).")
    def group(self) -> str:
        """Group."""
        return self.entry.gvk.group

    @strawberry.field
    def version(self) -> str:
        """Root GVK version."""
        return self.entry.gvk.version

    @strawberry.field
    def kind(self) -> str:
        """Root GVK kind."""
        return self.entry.gvk.kind

    @strawberry.field(description="catalog, cluster (Karta custom resource), state (offline store) or file.")
    def origin(self) -> str:
        """Origin."""
        return self.entry.origin

    @strawberry.field(description="True when another registered definition for the same GVK wins (oldest wins).")
    def shadowed(self) -> bool:
        """Shadowed flag."""
        return self.entry.shadowed

    @strawberry.field(description="Registration time (RFC 3339); empty for catalog entries.")
    def registered_at(self) -> str:
        """Registration time."""
        return self.entry.registered_at

    @strawberry.field(description="Operator release a catalog definition was written against.")
    def source_version(self) -> str:
        """Source version."""
        return self.entry.source_version

    @strawberry.field(description="Component names, root first.")
    def components(self) -> list[str]:
        """Component names."""
        return [c.name for c in self.entry.definition.components]

    @strawberry.field(description="The normalized run.ai/v1alpha1 Karta manifest.")
    def manifest(self) -> JSON:
        """Manifest."""
        return JSON(self.entry.definition.manifest)


@strawberry.type(description="One validation finding: the field path and the reason.")
class Problem:
    """``{path, message}``."""

    path: str
    message: str

    @classmethod
    def of(cls, p: ProblemValue) -> Problem:
        """From the domain value."""
        return cls(path=p.path, message=p.message)


@strawberry.type(description="A stored definition that failed validation and is not in force.")
class SkippedDefinition:
    """Adapter over :class:`workload_map.registration.following.Skipped`."""

    name: str
    origin: str
    problems: list[Problem]

    @classmethod
    def of(cls, s: Skipped) -> SkippedDefinition:
        """From the domain value."""
        return cls(name=s.key, origin=s.origin, problems=[Problem.of(p) for p in s.problems])


@strawberry.type(description="Outcome of a registration mutation: the stored definition, or every problem.")
class RegistrationResult:
    """``ok`` is true when ``problems`` is empty."""

    ok: bool
    dry_run: bool
    created: bool
    definition: Definition | None
    problems: list[Problem]
