"""The built-in catalog: one validated definition per root GVK, loaded from ``catalog/``.

Files are ``<slug>.yaml`` (``jobset-x-k8s-io-jobset-v1alpha2.yaml``). Each definition may
carry two annotations read here:

* ``workload-map.run.ai/aliases``: comma-separated short names accepted by
  ``registerCatalogType`` / ``{"catalog": "<name>"}`` (``jobset``, ``lws``, ...);
* ``workload-map.run.ai/source-version``: the operator release it was written against.

A built-in definition that fails validation, two for one GVK, or a directory holding no
definition at all, is a packaging bug: :func:`load_catalog` raises instead of serving a
partial (or empty) catalog.

Start-up cost: compiling every jq expression of the catalog (about 250) takes longer than
the rest of an offline ``wmap describe -f``. ``load_catalog(..., defer_jq=True)`` checks
every rule but the jq one at load and leaves the jq rule to :meth:`Catalog.check`, which
the offline CLI calls with the kinds its input holds (``wmap validate``, ``wmap catalog``
and ``wmap serve`` load the catalog fully checked). The files' parsed YAML is cached by
content (``workload_map.definitions.parsecache``).

A deferred catalog also builds its entries on first use, by root group/kind: ``get`` builds
the entries of one group/kind, iterating (and ``find``, ``len``) all of them. One-shot
``wmap describe -f`` calls :meth:`Catalog.narrow` with the kinds its input holds once the
input is read, so it builds three of the 35 entries for a JobSet file (building all of them
is about 6 ms, a twentieth of the command: docs/engine-speed.md). Which entries are built
never changes an answer: a view needs its root object in the input, an object is hidden
only by a covered ancestor held in the input (``workload_map.owners.is_top_level``), and the
kinds the input's definitions nest are kept too (their would-be children are resolved
through them).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from msgspec import Struct

from workload_map.definitions.load import load_definition, load_documents
from workload_map.definitions.parsecache import parsed_files
from workload_map.definitions.model import Definition
from workload_map.errors import DefinitionError, DefinitionNotFound, InvalidDefinition, ServerError
from workload_map.gvk import GVK

ALIASES_ANNOTATION = "workload-map.run.ai/aliases"
SOURCE_VERSION_ANNOTATION = "workload-map.run.ai/source-version"


class CatalogEntry(Struct, frozen=True):
    """A built-in definition with its file, aliases and operator source version."""

    definition: Definition
    file: str
    aliases: tuple[str, ...]
    source_version: str

    @property
    def gvk(self) -> GVK:
        """The root GVK."""
        return self.definition.gvk


class Catalog:
    """Built-in definitions keyed by root GVK (an entry never changes once built).

    Args:
        entries: the definitions.
        unchecked: GVKs of entries whose jq rule has not run yet (:meth:`check` runs it).
        deferred: ``(file name, document)`` of entries built on first use, their jq rule
            deferred too (see the module docstring).

    Raises:
        DefinitionError: when two entries claim the same GVK (on construction, or when
            deferred entries are built) or a deferred document is invalid.
    """

    def __init__(self, entries: list[CatalogEntry], unchecked: Iterable[GVK] = (),
                 deferred: Iterable[tuple[str, Any]] = ()) -> None:
        self._by_gvk: dict[GVK, CatalogEntry] = {}
        self._unchecked: set[GVK] = set()
        #: root (group, kind) -> its documents not built yet (None: no readable root kind).
        self._deferred: dict[tuple[str, str] | None, list[tuple[str, Any]]] = {}
        self._add(entries, unchecked)
        for name, doc in deferred:
            self._deferred.setdefault(root_group_kind(doc), []).append((name, doc))

    def _add(self, entries: list[CatalogEntry], unchecked: Iterable[GVK]) -> None:
        for entry in entries:
            if entry.gvk in self._by_gvk:
                raise DefinitionError(f"catalog: {entry.file} and {self._by_gvk[entry.gvk].file} both define {entry.gvk}")
            self._by_gvk[entry.gvk] = entry
        self._unchecked |= set(unchecked) & {e.gvk for e in entries}

    def _build(self, group_kinds: Iterable[tuple[str, str]] | None = None) -> None:
        """Build the deferred entries of ``group_kinds`` (None: all).

        A document without a readable root kind is built by every call, so its error is
        never skipped.
        """
        if not self._deferred:
            return
        wanted = self._deferred if group_kinds is None else {*group_kinds, None}
        docs = [item for key in [k for k in self._deferred if k in wanted] for item in self._deferred.pop(key)]
        entries = [catalog_entry(name, doc, defer_jq=True) for name, doc in docs]
        self._add(entries, [e.gvk for e in entries])

    def narrow(self, group_kinds: Iterable[tuple[str, str]]) -> None:
        """Keep only the entries ``group_kinds`` need, building them (one-shot ``describe -f``).

        Needed: the entries of ``group_kinds`` and, transitively, of the kinds their
        definitions nest (``workload-map.run.ai/nested``): a workload whose nested children
        are not created yet resolves the would-be children through their kinds' definitions
        (``nested-templates``: a queued AppWrapper's PyTorchJob), which the input does not
        hold. Entries already built stay. Raises as the constructor, for the entries built.
        """
        from workload_map.definitions.extensions import extensions_of

        wanted, built = set(group_kinds), set[tuple[str, str]]()
        while wanted - built:
            self._build(wanted - built)
            built |= wanted
            wanted |= {nested for e in self._by_gvk.values() if e.gvk.group_kind in built
                       for nested in extensions_of(e.definition).nested}
        self._deferred.clear()

    @property
    def unchecked(self) -> frozenset[GVK]:
        """GVKs whose jq expressions are not compiled and checked yet (builds every entry)."""
        self._build()
        return frozenset(self._unchecked)

    def check(self, group_kinds: Iterable[tuple[str, str]] | None = None) -> None:
        """Compile and check the jq expressions of the entries of ``group_kinds`` (None: all).

        Each entry is checked once; entries loaded fully checked are skipped. Compiled
        programs stay in this process's cache, so resolver processes forked afterwards
        reuse them.

        Raises:
            DefinitionError: an expression does not compile or uses a forbidden construct
                (the message names the file and every problem).
        """
        from workload_map.definitions.validate import jq_rules

        wanted = None if group_kinds is None else set(group_kinds)
        self._build(wanted)
        for gvk in sorted(self._unchecked, key=str):
            if wanted is not None and gvk.group_kind not in wanted:
                continue
            entry = self._by_gvk[gvk]
            problems = jq_rules(entry.definition)
            if problems:
                error = InvalidDefinition(problems, name=entry.definition.name)
                raise DefinitionError(f"catalog file {entry.file}: {error}")
            self._unchecked.discard(gvk)

    def __iter__(self) -> Iterator[CatalogEntry]:
        self._build()
        return iter(sorted(self._by_gvk.values(), key=lambda e: e.definition.name))

    def __len__(self) -> int:
        self._build()
        return len(self._by_gvk)

    def get(self, gvk: GVK) -> CatalogEntry | None:
        """The entry for ``gvk``, or None."""
        self._build((gvk.group_kind,))
        return self._by_gvk.get(gvk)

    def find(self, name: str) -> CatalogEntry:
        """Look an entry up by slug/metadata name, alias, lowercase kind or ``kind.group``.

        Raises:
            DefinitionNotFound: no entry matches, or a kind matches several (the message
                lists the candidates).
        """
        wanted = name.strip().lower()
        exact = [e for e in self if wanted in (e.definition.name.lower(), *e.aliases)]
        if exact:
            return exact[0]
        by_kind = [e for e in self if wanted in (e.gvk.kind.lower(), f"{e.gvk.kind}.{e.gvk.group}".lower())]
        if len(by_kind) == 1:
            return by_kind[0]
        if by_kind:
            names = ", ".join(e.definition.name for e in by_kind)
            raise DefinitionNotFound(f'catalog type "{name}" is ambiguous; use one of: {names}')
        raise DefinitionNotFound(f'no catalog type "{name}"; `wmap catalog` lists them')


def load_catalog(directory: str | Path, *, defer_jq: bool = False) -> Catalog:
    """Load every ``*.yaml`` under ``directory`` (not recursive).

    Args:
        directory: the catalog folder (``workload_map.config.default_catalog_dir``).
        defer_jq: check every rule but the jq one now; :meth:`Catalog.check` runs that
            one per kind later (see the module docstring).

    Raises:
        DefinitionError: the directory is missing or holds no ``*.yaml`` file, a file is
            invalid (every problem, with the file name), or two files define the same GVK.
            With ``defer_jq`` the files are only parsed here: a document's other problems
            are raised when its entry is built (first use of its group/kind).
    """
    folder = Path(directory)
    files = sorted(folder.glob("*.yaml"))
    if not files:
        reason = "does not exist" if not folder.is_dir() else "holds no *.yaml definition file"
        raise DefinitionError(f"catalog directory {folder} {reason}: the built-in catalog cannot be empty "
                              "(set WMAP_CATALOG_DIR or --catalog-dir to the catalog folder)")
    parsed = [(name, doc) for name, docs in parsed_files(files) for doc in docs]
    if defer_jq:
        return Catalog([], deferred=parsed)
    return Catalog([catalog_entry(name, doc) for name, doc in parsed])


def catalog_entry(name: str, doc: Any, *, defer_jq: bool = False) -> CatalogEntry:
    """The entry of one catalog document of file ``name`` (``defer_jq`` as in :func:`load_catalog`).

    Raises:
        DefinitionError: the document is invalid (every problem, with the file name).
    """
    try:
        definition = load_definition(doc, check_jq=not defer_jq)
    except InvalidDefinition as exc:
        raise DefinitionError(f"catalog file {name}: {exc}") from None
    annotations = doc.get("metadata", {}).get("annotations") or {}
    aliases = tuple(a.strip().lower() for a in str(annotations.get(ALIASES_ANNOTATION, "")).split(",") if a.strip())
    return CatalogEntry(definition, name, aliases, str(annotations.get(SOURCE_VERSION_ANNOTATION, "")))


def root_group_kind(doc: Any) -> tuple[str, str] | None:
    """``(group, kind)`` of a definition document's root component, None when not readable as such.

    Reads ``spec.structureDefinition.rootComponent.kind`` (or, for a bare spec, the same
    path without ``spec``) as ``workload_map.definitions.parse`` does; anything else is None.
    """
    spec = doc.get("spec") if isinstance(doc, dict) else None
    if spec is None and isinstance(doc, dict) and "structureDefinition" in doc:
        spec = doc
    node: Any = spec
    for key in ("structureDefinition", "rootComponent", "kind"):
        node = node.get(key) if isinstance(node, dict) else None
    if not isinstance(node, dict):
        return None
    group, kind = node.get("group", ""), node.get("kind")
    return (group, kind) if isinstance(group, str) and isinstance(kind, str) else None


def load_definition_dir(directory: str | Path) -> tuple[list[tuple[str, Definition]], list[str]]:
    """Extra definitions mounted as files (``*.yaml``, ``*.yml``, ``*.json``; not recursive).

    Unlike the built-in catalog, a bad file is skipped, never fatal: a broken definition
    must not take the others (or the server) down.

    Returns:
        ``[(file name, definition)]`` for the valid documents and one message per skipped
        document (file, and every problem).
    """
    loaded: list[tuple[str, Definition]] = []
    skipped: list[str] = []
    for path in sorted(Path(directory).glob("*")):
        if path.suffix not in (".yaml", ".yml", ".json") or not path.is_file():
            continue
        try:
            docs = load_documents(path.read_text(encoding="utf-8"), source=path.name)
        except (OSError, UnicodeDecodeError, ServerError) as exc:
            skipped.append(f"{path.name}: {exc}")
            continue
        for doc in docs:
            try:
                loaded.append((path.name, load_definition(doc)))
            except ServerError as exc:
                skipped.append(f"{path.name}: {exc}")
    return loaded, skipped
