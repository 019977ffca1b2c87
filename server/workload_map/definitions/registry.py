"""All definitions in force: the built-in catalog plus registered ones, one per root GVK.

Precedence (docs/definition-format.md section 9): a registered definition (a Karta custom resource
in the cluster, or one stored in the offline state directory) replaces the catalog entry
with the same root GVK. Among registered definitions for one GVK, the **oldest wins**
(earliest ``registered_at``); the others are kept and reported as ``shadowed``.

Lookup falls back from the exact GVK to the same group and kind at another version, so
a workload served at a newer version still resolves (the fallback is reported).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Iterator

from msgspec import Struct, field

from workload_map.definitions.catalog import Catalog
from workload_map.definitions.model import Definition
from workload_map.gvk import GVK
from workload_map.logs import logger

_SEQUENCE = itertools.count()
log = logger(__name__)


class Entry(Struct, frozen=True):
    """A definition in the registry.

    Attributes:
        origin: ``catalog``, ``cluster`` (Karta CR), ``state`` (offline store) or ``file``.
        key: stable id (``metadata.name``; unique per origin).
        registered_at: ordering key for the oldest-wins rule (creationTimestamp or load order).
        shadowed: True when another definition for the same GVK wins.
    """

    definition: Definition
    origin: str
    key: str
    registered_at: str = ""
    sequence: int = field(default_factory=lambda: next(_SEQUENCE))
    shadowed: bool = False
    source_version: str = ""

    @property
    def gvk(self) -> GVK:
        """Root GVK."""
        return self.definition.gvk


class DefinitionRegistry:
    """Mutable set of definitions; thread-unsafe, used from one event loop.

    Every mutation bumps :attr:`generation` and calls each change hook (``add_listener``)
    with the root GVKs whose definition may have changed, so the materialized views
    re-resolve the workloads of those kinds.
    """

    def __init__(self, catalog: Catalog | None = None) -> None:
        self.catalog = catalog if catalog is not None else Catalog([])
        self._registered: dict[tuple[str, str], Entry] = {}
        self.generation = 0
        self._listeners: list[Callable[[frozenset[GVK]], None]] = []

    def add_listener(self, listener: Callable[[frozenset[GVK]], None]) -> None:
        """Call ``listener(root_gvks)`` after every register/unregister (synchronously)."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[frozenset[GVK]], None]) -> None:
        """Stop calling ``listener`` (no error when it is not registered)."""
        if listener in self._listeners:
            self._listeners.remove(listener)

    def _changed(self, *gvks: GVK) -> None:
        self.generation += 1
        for listener in list(self._listeners):
            try:
                listener(frozenset(gvks))
            except Exception:  # noqa: BLE001 - a broken hook must not fail a registration
                log.exception("definition change hook %r failed", listener)

    def register(self, definition: Definition, *, origin: str, key: str | None = None,
                 registered_at: str = "", source_version: str = "") -> Entry:
        """Add or replace the definition stored under ``(origin, key)``."""
        key = key or definition.name
        previous = self._registered.get((origin, key))
        entry = Entry(definition, origin, key, registered_at or (previous.registered_at if previous else ""),
                      source_version=source_version)
        self._registered[(origin, key)] = entry
        self._changed(*([previous.gvk] if previous is not None else []), entry.gvk)
        return entry

    def unregister(self, *, origin: str, key: str) -> Entry | None:
        """Remove ``(origin, key)``; returns what was removed."""
        entry = self._registered.pop((origin, key), None)
        if entry is not None:
            self._changed(entry.gvk)
        return entry

    def registered(self, origin: str | None = None) -> list[Entry]:
        """Registered entries (optionally of one origin), with ``shadowed`` filled in."""
        winners = self._winners()
        out = []
        for entry in self._registered.values():
            if origin is None or entry.origin == origin:
                shadowed = winners.get(entry.gvk) is not entry
                out.append(entry if entry.shadowed == shadowed else _replace(entry, shadowed))
        return out

    def _winners(self) -> dict[GVK, Entry]:
        winners: dict[GVK, Entry] = {}
        for entry in sorted(self._registered.values(), key=lambda e: (e.registered_at or "~", e.sequence)):
            winners.setdefault(entry.gvk, entry)
        return winners

    def entries(self) -> Iterator[Entry]:
        """Every definition in force (one per GVK), registered over catalog, sorted by name."""
        winners = self._winners()
        merged: dict[GVK, Entry] = {e.gvk: Entry(e.definition, "catalog", e.definition.name, "",
                                                 source_version=e.source_version) for e in self.catalog}
        merged.update(winners)
        return iter(sorted(merged.values(), key=lambda e: e.definition.name))

    def lookup(self, gvk: GVK) -> Entry | None:
        """The definition in force for ``gvk``; falls back to the same group/kind."""
        winners = self._winners()
        if gvk in winners:
            return winners[gvk]
        entry = self.catalog.get(gvk)
        if entry is not None:
            return Entry(entry.definition, "catalog", entry.definition.name, source_version=entry.source_version)
        for candidate in self.entries():
            if candidate.gvk.group_kind == gvk.group_kind:
                return candidate
        return None

    def root_gvks(self) -> list[GVK]:
        """Root GVKs of every definition in force."""
        return [e.gvk for e in self.entries()]


def _replace(entry: Entry, shadowed: bool) -> Entry:
    return Entry(entry.definition, entry.origin, entry.key, entry.registered_at, entry.sequence, shadowed,
                 entry.source_version)
