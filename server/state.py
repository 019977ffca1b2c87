"""Registered definitions: where they persist and how a registration happens.

Two stores implement :class:`DefinitionStore`:

* :class:`DirectoryStore` (origin ``state``), used offline (snapshot source): one YAML
  file per definition under ``settings.state_dir``, written atomically (temporary file,
  ``fsync``, ``rename``, ``fsync`` of the directory), reloaded at start;
* ``server.kube.kartas.KartaStore`` (origin ``cluster``), used against a cluster: one
  ``kartas.run.ai`` custom resource per definition.

:class:`Registrar` is the one write path used by GraphQL and REST: parse and validate
(every problem at once), check the one-definition-per-GVK rule, run a trial evaluation in
a child process (``server.jq.trial``), persist, then put the definition into the
:class:`~server.definitions.registry.DefinitionRegistry` and ask for its kinds to be
watched. Any failure before the registry update leaves the previous definition in force.
It also follows Karta objects seen by a reader (:meth:`Registrar.follow`): each valid one
is registered with origin ``cluster``, an invalid one is skipped and reported (never
raised), a deleted one is removed.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import yaml

from server.definitions.load import check_definition, check_termination, load_definition, load_documents
from server.definitions.model import Definition
from server.definitions.registry import DefinitionRegistry, Entry
from server.definitions.validate import jq_fields
from server.errors import Conflict, DefinitionNotFound, InvalidDefinition, Problem, ServerError
from server.gvk import GVK
from server.jq.trial import TRIAL_TIMEOUT_S
from server.kube.reader import Reader

log = logging.getLogger(__name__)

KARTA_GVK = GVK("run.ai", "v1alpha1", "Karta")
POD_GVK = GVK("", "v1", "Pod")
REGISTERED_AT = "workload-map.run.ai/registered-at"
GVK_LABELS = (("karta.run.ai/group", "run.ai/karta-group"), ("karta.run.ai/version", "run.ai/karta-version"),
              ("karta.run.ai/kind", "run.ai/karta-kind"))
"""Both upstream spellings of the GVK labels stamped on a stored definition (karta-spec.md 2)."""

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


def not_deletable(gvk: GVK) -> Conflict:
    """The error for removing a definition this server's store does not hold (a built-in
    catalog entry, or one registered elsewhere: a definition file, a Karta object)."""
    return Conflict(f"{gvk.kind}.{gvk.group or 'core'} is built in (or registered elsewhere) and cannot be "
                    "deleted here")


class StoreError(ServerError):
    """The definition store cannot be written or read (disk, API server, missing CRD)."""

    code = "store_unavailable"


@dataclass(frozen=True, slots=True)
class StoredDefinition:
    """One definition as read back from a store: its key and decoded document."""

    key: str
    document: Any
    source: str


class DefinitionStore(Protocol):
    """Where registered definitions persist (see module docstring)."""

    origin: str

    async def save(self, key: str, manifest: Mapping[str, Any]) -> None:
        """Create or replace ``key``. Raises ``StoreError`` or ``Conflict``."""
        ...

    async def delete(self, key: str) -> bool:
        """Remove ``key``; False when it was not stored. Raises ``StoreError``."""
        ...

    async def load(self) -> list[StoredDefinition]:
        """Everything stored (read at start; may be empty when a watch delivers them)."""
        ...


class DirectoryStore:
    """Definitions as ``<key>.yaml`` files in one directory (origin ``state``).

    Args:
        directory: created on first write.
    """

    origin = "state"
    max_key_length = 255 - len(".yaml")
    """File names hold at most 255 bytes (ext4, xfs, tmpfs NAME_MAX): a longer definition
    name is refused before anything is written."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    async def save(self, key: str, manifest: Mapping[str, Any]) -> None:
        """Write ``<key>.yaml`` atomically. Raises ``StoreError`` on any OS error."""
        text = yaml.safe_dump(dict(manifest), sort_keys=False)
        try:
            await asyncio.to_thread(self._write, key, text)
        except OSError as exc:
            raise StoreError(f"cannot write definition {key!r} to {self.directory}: {exc.strerror or exc}") from exc

    def _write(self, key: str, text: str) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        final = self.directory / f"{key}.yaml"
        tmp = self.directory / f".wmap-{os.getpid()}-{threading.get_ident()}.tmp"  # short: the key may be long
        try:
            with open(tmp, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, final)
        finally:
            tmp.unlink(missing_ok=True)
        self._sync_directory()

    def _sync_directory(self) -> None:
        fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    async def delete(self, key: str) -> bool:
        """Remove ``<key>.yaml``. Raises ``StoreError`` on an OS error other than absence."""
        path = self.directory / f"{key}.yaml"
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise StoreError(f"cannot delete {path}: {exc.strerror or exc}") from exc
        await asyncio.to_thread(self._sync_directory)
        return True

    async def load(self) -> list[StoredDefinition]:
        """Every ``*.yaml``/``*.json`` file (temporary files ignored); unreadable ones are
        returned with ``document`` None so the caller reports them."""
        if not self.directory.is_dir():
            return []
        out = []
        for path in sorted(self.directory.iterdir()):
            if path.name.startswith(".") or path.suffix not in (".yaml", ".yml", ".json"):
                continue
            try:
                docs = load_documents(path.read_text(encoding="utf-8"), source=path.name)
            except (OSError, ServerError) as exc:
                log.warning("skipping stored definition %s: %s", path, exc)
                docs = [None]
            out.append(StoredDefinition(path.stem, docs[0] if len(docs) == 1 else None, str(path)))
        return out


@dataclass(frozen=True, slots=True)
class Registration:
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


@dataclass(frozen=True, slots=True)
class Skipped:
    """A stored definition (file or Karta) that failed validation and is not in force."""

    origin: str
    key: str
    problems: tuple[Problem, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON shape ``{origin, name, problems: [{path, message}]}``."""
        return {"origin": self.origin, "name": self.key, "problems": [p.to_dict() for p in self.problems]}


class Registrar:
    """Validates, persists and registers definitions; follows Karta objects.

    Args:
        registry: the definitions in force.
        store: where registrations persist (its ``origin`` tags the entries).
        watch: called with every GVK a registered definition needs (root, children,
            additional kinds, pods); e.g. ``InformerCache.watch``.
        trial_timeout: seconds for the trial evaluation of new expressions (0 disables).
    """

    def __init__(self, registry: DefinitionRegistry, store: DefinitionStore, *,
                 watch: Callable[[GVK], None] | None = None, trial_timeout: float = TRIAL_TIMEOUT_S) -> None:
        self.registry = registry
        self.store = store
        self._watch = watch
        self.trial_timeout = trial_timeout
        self.skipped: dict[tuple[str, str], Skipped] = {}
        self._lock = asyncio.Lock()
        self._trial_passed: set[tuple[str, ...]] = set()

    # write path

    async def check(self, doc: Any) -> Definition:
        """Validate ``doc`` (text or decoded) as a registration would, storing nothing.

        Raises:
            InvalidRequest: undecodable text.
            InvalidDefinition: every problem, by field path (including a bad name and
                expressions that do not finish within the trial budget).
            Conflict: another registered definition (other name) claims the same GVK.
        """
        definition = load_definition(doc)
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
        return definition

    async def _trial(self, definition: Definition) -> list[Problem]:
        if self.trial_timeout <= 0:
            return []
        fields = list(jq_fields(definition))
        key = tuple(sorted({e for _, e in fields}))
        if key in self._trial_passed:
            return []
        problems = await asyncio.to_thread(check_termination, definition, timeout=self.trial_timeout)
        if not problems:
            if len(self._trial_passed) > 1024:
                self._trial_passed.clear()
            self._trial_passed.add(key)
        return problems

    async def register(self, doc: Any, *, dry_run: bool = False) -> Registration:
        """Validate, persist and register ``doc`` (see :meth:`check` for the errors).

        Raises:
            StoreError: the store could not be written (the previous definition stays).
        """
        async with self._lock:
            definition = await self.check(doc)
            previous = next((e for e in self.registry.registered(self.store.origin) if e.key == definition.name), None)
            if dry_run:
                return Registration(definition, None, previous is None, True)
            manifest = _stored_manifest(definition, previous)
            await self.store.save(definition.name, manifest)
            entry = self._put(self.store.origin, definition.name, load_definition(manifest),
                              manifest["metadata"]["annotations"][REGISTERED_AT])
            log.info("registered definition %s for %s (origin %s)", definition.name, definition.gvk,
                     self.store.origin)
            return Registration(entry.definition, entry, previous is None, False)

    async def unregister(self, key: str) -> Entry:
        """Remove the registered definition ``key`` from the store and the registry.

        Raises:
            Conflict: ``key`` names a built-in catalog definition or one of another origin
                (see :func:`not_deletable`).
            DefinitionNotFound: no definition at all is named ``key``.
            StoreError: the store could not be written.
        """
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
            return entry

    def _put(self, origin: str, key: str, definition: Definition, registered_at: str) -> Entry:
        current = next((e for e in self.registry.registered(origin) if e.key == key), None)
        self.skipped.pop((origin, key), None)
        if current is not None and current.definition == definition:
            return current
        entry = self.registry.register(definition, origin=origin, key=key, registered_at=registered_at)
        self.watch_kinds(definition.kinds())
        return entry

    def watch_kinds(self, kinds: Iterable[GVK]) -> None:
        """Ask the cache to watch ``kinds`` and pods (no-op without a ``watch`` callback)."""
        if self._watch is not None:
            for gvk in (*kinds, POD_GVK):
                self._watch(gvk)

    # read paths

    async def load_stored(self) -> None:
        """Register everything the store holds; invalid entries are skipped and reported."""
        for stored in await self.store.load():
            if await self._passes_trial(self.store.origin, stored.key, stored.document, stored.source):
                self._load_one(self.store.origin, stored.key, stored.document, stored.source)

    async def _passes_trial(self, origin: str, key: str, doc: Any, source: str) -> bool:
        """Definitions that arrive without the write path (a Karta applied with kubectl, a
        state file) get the same trial evaluation before they are used: one that crashes
        or hangs the evaluator must not take every server replica down."""
        definition, _ = check_definition(doc) if doc is not None else (None, [])
        if definition is None:
            return True  # _load_one reports the validation problems
        problems = await self._trial(definition)
        if problems:
            known = self.skipped.get((origin, key))
            self.skipped[(origin, key)] = Skipped(origin, key, tuple(problems))
            if known is None or known.problems != tuple(problems):
                log.warning("skipping definition %s from %s: %s", key, source, "; ".join(map(str, problems)))
        return not problems

    def _load_one(self, origin: str, key: str, doc: Any, source: str) -> None:
        definition, problems = check_definition(doc) if doc is not None else (None, [Problem("", "unreadable")])
        if definition is None:
            known = self.skipped.get((origin, key))
            self.skipped[(origin, key)] = Skipped(origin, key, tuple(problems))
            if known is None or known.problems != tuple(problems):
                log.warning("skipping definition %s from %s: %s", key, source, "; ".join(map(str, problems)))
            return
        meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
        annotations = meta.get("annotations") if isinstance(meta.get("annotations"), dict) else {}
        registered_at = str(annotations.get(REGISTERED_AT) or meta.get("creationTimestamp") or "")
        self._put(origin, key, definition, registered_at)

    def apply_karta(self, event_type: str, obj: Mapping[str, Any]) -> None:
        """Apply one Karta watch event to the registry (origin ``cluster``)."""
        name = str((obj.get("metadata") or {}).get("name", ""))
        if not name:
            return
        if event_type == "DELETED":
            self.skipped.pop(("cluster", name), None)
            if self.registry.unregister(origin="cluster", key=name) is not None:
                log.info("definition %s removed (Karta deleted)", name)
            return
        self._load_one("cluster", name, dict(obj), f"Karta {name}")

    async def follow(self, reader: Reader) -> None:
        """Keep cluster definitions in step with the Karta objects ``reader`` holds.

        Runs until cancelled; the subscriber queue is released in ``finally``.
        """
        queue = reader.subscribe()
        try:
            for obj in reader.list(KARTA_GVK):
                await self._apply_checked("ADDED", obj)
            while True:
                event = await queue.get()
                if event.gvk.group_kind == KARTA_GVK.group_kind:
                    await self._apply_checked(event.type, event.obj)
        finally:
            reader.unsubscribe(queue)

    async def _apply_checked(self, event_type: str, obj: Mapping[str, Any]) -> None:
        name = str((obj.get("metadata") or {}).get("name", ""))
        if event_type == "DELETED" or await self._passes_trial("cluster", name, dict(obj), f"Karta {name}"):
            self.apply_karta(event_type, obj)


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
