"""Definitions that arrive without the write path.

A store's contents at start, and Karta objects applied with ``kubectl`` (or by another
replica) seen through a reader.

:class:`DefinitionIntake` holds what the registration path shares with them: the registry
in force, the store (whose ``origin`` tags entries), the trial evaluation (jobs of the
resolver workers through a ``Sandbox``, ``workload_map.materialization.trial``) and the list
of skipped definitions. A valid arrival is
registered (origin ``cluster`` for a Karta, the store's origin for stored files); an
invalid one is skipped and reported (never raised); a deleted Karta is removed.
``workload_map.registration.registrar.Registrar`` adds the write path on top.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from msgspec import Struct

from workload_map.definitions.extensions import annotations_of, labels_of
from workload_map.definitions.load import check_definition
from workload_map.definitions.model import Definition
from workload_map.definitions.registry import DefinitionRegistry, Entry
from workload_map.definitions.validate import jq_fields
from workload_map.errors import Problem
from workload_map.gvk import GVK, KARTA_GVK, POD_GVK
from workload_map.kube.reader import ChangeEvent, Reader
from workload_map.logs import logger
from workload_map.materialization.sandbox import Sandbox
from workload_map.materialization.trial import check_termination
from workload_map.resolution.dra import DRA_KINDS
from workload_map.registration.stores import DefinitionStore

log = logger(__name__)

REGISTERED_AT = "workload-map.run.ai/registered-at"
"""Annotation holding a stored definition's first registration time (RFC 3339)."""

TRIAL_TIMEOUT_S = 2.0
"""Budget of one trial job in a registrar's own sandbox (the resolver's default budget)."""

TRIAL_MEMO_SIZE = 1024
"""Most expression sets remembered as having passed the trial (then the memo restarts)."""


def unchanged(current: Definition, new: Definition) -> bool:
    """Whether registering ``new`` over ``current`` changes nothing: the server keeps its entry and views.

    Definition equality leaves the manifest out (the source's parse), yet a definition's
    annotations carry meaning of their own: the extensions
    (``workload_map.definitions.extensions``: nested kinds, ``unknown-when``, ...) and the
    aliases are read from them, and its labels are what the definitions API answers. So
    both must be equal too, the annotations but the registration time
    (:data:`REGISTERED_AT`, kept from the first registration anyway).
    """
    return current == new and _metadata(current) == _metadata(new)


def _metadata(definition: Definition) -> tuple[dict[str, object], dict[str, object]]:
    return {k: v for k, v in annotations_of(definition).items() if k != REGISTERED_AT}, labels_of(definition)


class Skipped(Struct, frozen=True):
    """A stored definition (file or Karta) that failed validation and is not in force."""

    origin: str
    key: str
    problems: tuple[Problem, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON shape ``{origin, name, problems: [{path, message}]}``."""
        return {"origin": self.origin, "name": self.key, "problems": [p.to_dict() for p in self.problems]}


class DefinitionIntake:
    """The registry side shared by every way a definition arrives.

    Args:
        registry: the definitions in force.
        store: where registrations persist (its ``origin`` tags the entries).
        watch: called with every GVK a registered definition needs (root, children,
            additional kinds, pods); e.g. ``InformerCache.watch``.
        trial_timeout: budget of one trial job (one expression), seconds, in the sandbox the
            intake builds when it is given none (0 disables the trial).
        sandbox: where trial jobs run: the served ``WorkloadService.sandbox`` (its pool's
            budget then applies), set by the runtime; None: an own one, built on first use.
    """

    def __init__(self, registry: DefinitionRegistry, store: DefinitionStore, *,
                 watch: Callable[[GVK], None] | None = None, trial_timeout: float = TRIAL_TIMEOUT_S,
                 sandbox: Sandbox | None = None) -> None:
        self.registry = registry
        self.store = store
        self._watch = watch
        self.trial_timeout = trial_timeout
        self.sandbox = sandbox
        self.skipped: dict[tuple[str, str], Skipped] = {}
        self._trial_passed: set[tuple[str, ...]] = set()

    async def _trial(self, definition: Definition) -> list[Problem]:
        """Problems of the trial evaluation (off the event loop); [] when it passed before."""
        if self.trial_timeout <= 0:
            return []
        key = tuple(sorted({expression for _, expression in jq_fields(definition)}))
        if key in self._trial_passed:
            return []
        problems = await check_termination(self.jq_sandbox(), definition)
        if not problems:
            if len(self._trial_passed) > TRIAL_MEMO_SIZE:
                self._trial_passed.clear()
            self._trial_passed.add(key)
        return problems

    def jq_sandbox(self) -> Sandbox:
        """Where this intake's trial jobs run (and the studio's, through the runtime)."""
        if self.sandbox is None:
            self.sandbox = Sandbox(self.trial_timeout if self.trial_timeout > 0 else TRIAL_TIMEOUT_S)
        return self.sandbox

    def _put(self, origin: str, key: str, definition: Definition, registered_at: str) -> Entry:
        """Put ``definition`` into the registry (unchanged ones keep their entry) and watch its kinds."""
        current = next((e for e in self.registry.registered(origin) if e.key == key), None)
        self.skipped.pop((origin, key), None)
        if current is not None and unchanged(current.definition, definition):
            return current
        entry = self.registry.register(definition, origin=origin, key=key, registered_at=registered_at)
        self.watch_kinds(definition.kinds())
        return entry

    def watch_kinds(self, kinds: Iterable[GVK]) -> None:
        """Ask the cache to watch ``kinds``, pods and the DRA claim kinds pods name.

        A no-op without a ``watch`` callback.
        """
        if self._watch is not None:
            for gvk in (*kinds, POD_GVK, *DRA_KINDS):
                self._watch(gvk)

    def _skip(self, origin: str, key: str, problems: Iterable[Problem], source: str) -> None:
        """Record ``key`` as skipped; log only when its problems changed."""
        found = tuple(problems)
        known = self.skipped.get((origin, key))
        self.skipped[(origin, key)] = Skipped(origin, key, found)
        if known is None or known.problems != found:
            log.warning("skipping definition %s from %s: %s", key, source, "; ".join(map(str, found)))

    async def load_stored(self) -> None:
        """Register everything the store holds; invalid entries are skipped and reported."""
        for stored in await self.store.load():
            if await self._passes_trial(self.store.origin, stored.key, stored.document, stored.source):
                self._load_one(self.store.origin, stored.key, stored.document, stored.source)

    async def _passes_trial(self, origin: str, key: str, doc: Any, source: str) -> bool:
        """True when a definition arriving without the write path passes the trial.

        A Karta applied with kubectl, or a state file, gets the same trial evaluation before
        it is used: one that crashes or hangs the evaluator must not take every server
        replica down.
        """
        definition, _ = check_definition(doc) if doc is not None else (None, [])
        if definition is None:
            return True  # _load_one reports the validation problems
        problems = await self._trial(definition)
        if problems:
            self._skip(origin, key, problems, source)
        return not problems

    def _load_one(self, origin: str, key: str, doc: Any, source: str) -> None:
        definition, problems = check_definition(doc) if doc is not None else (None, [Problem("", "unreadable")])
        if definition is None:
            self._skip(origin, key, problems, source)
            return
        raw_meta = doc.get("metadata")
        meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        raw_annotations = meta.get("annotations")
        annotations: dict[str, Any] = raw_annotations if isinstance(raw_annotations, dict) else {}
        registered_at = str(annotations.get(REGISTERED_AT) or meta.get("creationTimestamp") or "")
        self._put(origin, key, definition, registered_at)

    def apply_karta(self, event_type: str, obj: Mapping[str, Any]) -> None:
        """Apply one Karta watch event (``ADDED``/``MODIFIED``/``DELETED``) to the registry.

        The entry's origin is ``cluster``; an invalid Karta is recorded in :attr:`skipped`,
        not raised.
        """
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

        Karta events are taken losslessly: through the reader's synchronous listener hook
        (``ObjectGraph.add_listener``) into an unbounded local queue that only ever holds
        Karta events (a handful), so the event storm of an initial list of pods cannot push
        a definition change out of a bounded subscriber queue. Runs until cancelled; the hook
        is released in ``finally``.
        """
        local: asyncio.Queue[ChangeEvent] = asyncio.Queue()

        def on_change(event: ChangeEvent) -> None:
            if event.gvk.group_kind == KARTA_GVK.group_kind:
                local.put_nowait(event)

        reader.add_listener(on_change)
        try:
            for obj in reader.list(KARTA_GVK):
                await self._apply_checked("ADDED", obj)
            while True:
                event = await local.get()
                await self._apply_checked(event.type, event.obj)
        finally:
            reader.remove_listener(on_change)

    async def _apply_checked(self, event_type: str, obj: Mapping[str, Any]) -> None:
        name = str((obj.get("metadata") or {}).get("name", ""))
        if event_type == "DELETED" or await self._passes_trial("cluster", name, dict(obj), f"Karta {name}"):
            self.apply_karta(event_type, obj)
