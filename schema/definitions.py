"""GraphQL types for definitions and their registration results, and the guard every
registration path (GraphQL and REST) runs the definition engine under."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

import strawberry
import yaml
from strawberry.scalars import JSON

from server.definitions.registry import Entry
from server.errors import InvalidDefinition, InvalidRequest
from server.errors import Problem as ProblemValue
from server.state import Skipped

log = logging.getLogger(__name__)

MAX_EXPANDED_VALUES = 250_000
"""Most values a definition may hold once YAML aliases are expanded (a 1 MiB document without
aliases holds far fewer)."""

ENGINE_FAILURES = (TypeError, ValueError, KeyError, AttributeError, IndexError, RecursionError)
"""Exceptions the definition engine should never raise on a caller's document."""


def check_expansion(doc: Any, *, limit: int = MAX_EXPANDED_VALUES) -> None:
    """Refuse YAML text whose aliases expand beyond ``limit`` values ("billion laughs"): PyYAML
    shares aliased nodes, but every later JSON encoding (API responses, the Karta object)
    expands them, which would stall the event loop and exhaust memory.

    Text without ``*`` (no alias) is not parsed here; decoded documents are not checked.

    Raises:
        InvalidRequest: the expansion exceeds ``limit`` values.
    """
    if not isinstance(doc, str) or "*" not in doc:
        return
    try:
        documents = list(yaml.safe_load_all(doc))
    except (yaml.YAMLError, RecursionError):
        return  # the registration reports the syntax error itself
    seen, stack = 0, documents
    while stack:
        value = stack.pop()
        seen += 1
        if seen > limit:
            raise InvalidRequest(f"the definition expands to more than {limit} values (YAML aliases); "
                                 "write it without anchors and aliases")
        if isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)


@contextlib.contextmanager
def unreadable_as_invalid() -> Iterator[None]:
    """Turn an engine crash on a caller's document into ``InvalidDefinition`` (422), logged
    with its traceback once: a bad document must never become a 500. (Example found by
    ``tests/auth/test_fuzz.py``: ``kind: {}`` made the parser hash a dict.)

    Raises:
        InvalidDefinition: the engine failed on the document.
    """
    try:
        yield
    except ENGINE_FAILURES as exc:
        log.exception("the definition engine failed on a submitted document; answered as invalid")
        raise InvalidDefinition([ProblemValue("", f"the definition cannot be read ({type(exc).__name__}); "
                                                  "check its structure against the Karta format")]) from None


@strawberry.type(description="A definition in force (or registered but shadowed).")
class Definition:
    """Adapter over :class:`server.definitions.registry.Entry`."""

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
        return self.entry.definition.manifest


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
    """Adapter over :class:`server.state.Skipped`."""

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
