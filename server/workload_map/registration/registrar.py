"""The one write path for definitions, used alike by GraphQL, REST and the CLI.

:class:`Registrar` parses and validates a document (every problem at once), checks the
one-definition-per-GVK rule, runs a trial evaluation on the resolver workers
(``workload_map.materialization.trial``), persists it in its store, then puts it into the
:class:`~workload_map.definitions.registry.DefinitionRegistry` and asks for its kinds to be
watched. Any failure before the registry update leaves the previous definition in force.
Definitions that arrive without this path (stored files, Karta objects) are handled by
its base, :class:`~workload_map.registration.following.DefinitionIntake`.

:func:`register_document` is the front doors' entry point: the guards of
``workload_map.registration.guards`` around :meth:`Registrar.register`.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

from msgspec import Struct
import msgspec.structs

from workload_map.definitions.load import load_definition
from workload_map.definitions.model import Definition
from workload_map.definitions.registry import DefinitionRegistry, Entry
from workload_map.errors import (
    Conflict,
    DefinitionNotFound,
    DefinitionsTooLarge,
    InvalidDefinition,
    Problem,
    TooManyDefinitions,
)
from workload_map.gvk import GVK
from workload_map.logs import logger
from workload_map.materialization.sandbox import Sandbox
from workload_map.registration.following import REGISTERED_AT, TRIAL_TIMEOUT_S, DefinitionIntake
from workload_map.registration.guards import decode_checked, unreadable_as_invalid
from workload_map.registration.stores import DefinitionStore

log = logger(__name__)

GVK_LABELS = (("karta.run.ai/group", "run.ai/karta-group"), ("karta.run.ai/version", "run.ai/karta-version"),
              ("karta.run.ai/kind", "run.ai/karta-kind"))
"""Both upstream spellings of the GVK labels stamped on a stored definition (docs/definition-format.md section 1)."""

WRITE_SETTLE_S = 10.0
"""Longest a registration waits for the views of the changed kinds (read-your-writes), seconds."""

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
"""A DNS subdomain name (Kubernetes "Object Names and IDs"), the rule for a Karta's name."""


def not_deletable(gvk: GVK) -> Conflict:
    """The error for removing a definition this server's store does not hold.

    That is a built-in catalog entry, or one registered elsewhere (a definition file, a
    Karta object).
    """
    return Conflict(f"{gvk.kind}.{gvk.group or 'core'} is built in (or registered elsewhere) and cannot be "
                    "deleted here")


class Registration(Struct, frozen=True):
    """Outcome of :meth:`Registrar.register`.

    Attributes:
        definition: the validated definition.
        entry: the registry entry (None for a dry run).
        created: True when no definition was stored under this key before.
        dry_run: nothing was stored.
    """

    definition: Definition
    entry: Entry | None
    created: bool
    dry_run: bool


MAX_DEFINITIONS = 500
"""Definitions one registrar stores at most (``--max-definitions``; 429 beyond)."""

MAX_DEFINITIONS_BYTES = 32 * 1024 * 1024
"""Total JSON size of the definitions one registrar stores (``--max-definitions-bytes``; 413 beyond).
A registered definition costs about 140 KB of memory (issue 29): 500 are about 70 MB."""


class Registrar(DefinitionIntake):
    """Validates, persists and registers definitions; follows Karta objects (see the base).

    ``max_definitions`` and ``max_definitions_bytes`` bound what its store holds (set from
    the settings by the runtime).

    Args:
        registry: the definitions in force.
        store: where registrations persist (its ``origin`` tags the entries).
        watch: called with every GVK a registered definition needs; e.g. ``InformerCache.watch``.
        trial_timeout: budget of one trial job in the registrar's own sandbox (0 disables
            the trial); a served registrar uses its service's sandbox (``DefinitionIntake``).
        sandbox: where trial jobs run (see ``DefinitionIntake``).

    Attributes:
        settle: read-your-writes: after a registration or removal that changed the
            definitions in force, awaited with ``WRITE_SETTLE_S`` before the call returns, so
            the caller's next read sees the workloads of the changed kinds re-resolved
            (the served views' ``settled``, attached by ``workload_map.api.runtime``); None:
            return at once (the CLI).
    """

    def __init__(self, registry: DefinitionRegistry, store: DefinitionStore, *,
                 watch: Callable[[GVK], None] | None = None, trial_timeout: float = TRIAL_TIMEOUT_S,
                 sandbox: Sandbox | None = None) -> None:
        super().__init__(registry, store, watch=watch, trial_timeout=trial_timeout, sandbox=sandbox)
        self._lock = asyncio.Lock()
        self.max_definitions = MAX_DEFINITIONS
        self.max_definitions_bytes = MAX_DEFINITIONS_BYTES
        self._sizes: dict[str, int] = {}
        self.settle: Callable[[float], Awaitable[bool]] | None = None

    async def _settled_since(self, generation: int) -> None:
        """Read-your-writes: wait for the views when the definitions changed since ``generation``."""
        if self.settle is not None and self.registry.generation != generation:
            await self.settle(WRITE_SETTLE_S)

    async def check(self, doc: Any) -> Definition:
        """Validate ``doc`` (text or decoded) as a registration would, storing nothing.

        Raises:
            InvalidRequest: undecodable text.
            InvalidDefinition: every problem, by field path (including a bad name and
                expressions that do not finish within the trial budget).
            Conflict: another registered definition (other name) claims the same GVK, or
                the name is that of a catalog or registered definition of another GVK.
        """
        definition = await asyncio.to_thread(load_definition, doc)  # parsing never runs on the event loop
        problems = [] if _NAME.fullmatch(definition.name) else [Problem(
            "metadata.name", f"{definition.name!r} is not a valid resource name (lowercase letters, digits, '-', "
                             "'.'; at most 253 characters)")]
        limit = getattr(self.store, "max_key_length", None)
        if not problems and isinstance(limit, int) and len(definition.name) > limit:
            problems.append(Problem("metadata.name", f"must be at most {limit} characters in the offline state "
                                                     f"directory (a file name), got {len(definition.name)}"))
        problems += await self._trial(definition)
        if problems:
            raise InvalidDefinition(problems, name=definition.name)
        for entry in self.registry.registered(self.store.origin):
            if entry.gvk == definition.gvk and entry.key != definition.name:
                raise Conflict(f"definition {entry.key!r} is already registered for {definition.gvk}; "
                               f"delete it first or register under that name")
        named = [("catalog", e.definition.name, e.gvk) for e in self.registry.catalog]
        named += [(e.origin, e.key, e.gvk) for e in self.registry.registered()]
        for origin, name, gvk in named:
            if name == definition.name and gvk != definition.gvk:
                raise Conflict(f"the name {definition.name!r} is taken by the {origin} definition for {gvk}; "
                               f"a definition name identifies one type: choose another name")
        return definition

    async def register(self, doc: Any, *, dry_run: bool = False) -> Registration:
        """Validate, persist and register ``doc`` (see :meth:`check` for the errors).

        Raises:
            StoreError: the store could not be written (the previous definition stays).
        """
        generation = self.registry.generation
        async with self._lock:
            definition = await self.check(doc)
            previous = next((e for e in self.registry.registered(self.store.origin) if e.key == definition.name), None)
            if dry_run:
                return Registration(definition, None, previous is None, True)
            manifest = _stored_manifest(definition, previous)
            self._check_room(definition.name, len(json.dumps(manifest, default=str)))
            await self.store.save(definition.name, manifest)
            # the stored manifest only adds labels and the registration time: not parsed again
            entry = self._put(self.store.origin, definition.name, msgspec.structs.replace(definition, manifest=manifest),
                              manifest["metadata"]["annotations"][REGISTERED_AT])
            log.info("registered definition %s for %s (origin %s)", definition.name, definition.gvk,
                     self.store.origin)
        await self._settled_since(generation)
        return Registration(entry.definition, entry, previous is None, False)

    def _check_room(self, key: str, size: int) -> None:
        """Refuse a definition that would exceed the count or total size limit (a replacement counts once).

        Raises:
            TooManyDefinitions: ``max_definitions`` are stored and ``key`` is new.
            DefinitionsTooLarge: the total JSON size would exceed ``max_definitions_bytes``.
        """
        stored = {e.key: e for e in self.registry.registered(self.store.origin)}
        if key not in stored and len(stored) >= self.max_definitions:
            raise TooManyDefinitions(f"{len(stored)} definitions are registered, the limit of this server "
                                     f"(--max-definitions); delete one first")
        for name, entry in stored.items():
            if name not in self._sizes:
                self._sizes[name] = len(json.dumps(entry.definition.manifest, default=str))
        total = sum(size_ for name, size_ in self._sizes.items() if name in stored and name != key) + size
        if total > self.max_definitions_bytes:
            raise DefinitionsTooLarge(f"the registered definitions would take {total:,} bytes, above the limit of "
                                      f"{self.max_definitions_bytes:,} (--max-definitions-bytes); delete some first")
        self._sizes[key] = size

    async def unregister(self, key: str) -> Entry:
        """Remove the registered definition ``key`` from the store and the registry.

        Raises:
            Conflict: ``key`` names a built-in catalog definition or one of another origin
                (see :func:`not_deletable`).
            DefinitionNotFound: no definition at all is named ``key``.
            StoreError: the store could not be written.
        """
        generation = self.registry.generation
        async with self._lock:
            entry = next((e for e in self.registry.registered(self.store.origin) if e.key == key), None)
            if entry is None:
                elsewhere = next((e for e in [*self.registry.entries(), *self.registry.registered()]
                                  if key in (e.key, e.definition.name)), None)
                if elsewhere is not None:
                    raise not_deletable(elsewhere.gvk)
                raise DefinitionNotFound(f"no registered definition named {key!r}")
            await self.store.delete(key)
            self.registry.unregister(origin=self.store.origin, key=key)
            self.skipped.pop((self.store.origin, key), None)
            log.info("unregistered definition %s (origin %s)", key, self.store.origin)
        await self._settled_since(generation)
        return entry

    def entry_of(self, outcome: Registration) -> Entry:
        """The registry entry of ``outcome``; for a dry run, an entry as it would be stored."""
        return outcome.entry or Entry(outcome.definition, self.store.origin, outcome.definition.name)


async def register_document(registrar: Registrar, doc: Any, *, dry_run: bool = False) -> Registration:
    """Register a caller's document (text or decoded) under the registration guards.

    Raises:
        InvalidRequest: undecodable text, or YAML aliases or merge keys expanding too far
            (counted by ``workload_map.definitions.load.expanded_values`` on libyaml's nodes,
            in a worker thread).
        InvalidDefinition: every problem, by field path (an engine crash on the document too).
        Conflict / StoreError: see :meth:`Registrar.register`.
    """
    with unreadable_as_invalid():
        return await registrar.register(decode_checked(doc), dry_run=dry_run)


def _stored_manifest(definition: Definition, previous: Entry | None) -> dict[str, Any]:
    """The manifest to store: the normalized Karta plus GVK labels and registration time."""
    manifest = dict(definition.manifest)
    meta = dict(manifest.get("metadata") or {})
    labels = dict(meta.get("labels") or {})
    gvk = definition.gvk
    for spellings, value in zip(GVK_LABELS, (gvk.group, gvk.version, gvk.kind)):
        for label in spellings:
            labels[label] = value
    annotations = dict(meta.get("annotations") or {})
    annotations[REGISTERED_AT] = (previous.registered_at if previous and previous.registered_at
                                  else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    meta.update(name=definition.name, labels=labels, annotations=annotations)
    manifest["metadata"] = meta
    return manifest
