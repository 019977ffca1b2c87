"""What every ``wmap`` command reads.

Exit codes, standard input (read once), snapshot files and the definition registry
(catalog plus ``--definition`` files).

Shared by :mod:`workload_map.cli.main` and :mod:`workload_map.cli.live` so that neither imports the
other's internals (``main`` registers ``live``'s commands; ``live`` imports only this).
Exit codes follow upstream ``kli``: see :mod:`workload_map.cli.main`.
"""

from __future__ import annotations

import atexit
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workload_map.paths import default_catalog_dir
from workload_map.errors import InvalidRequest

if TYPE_CHECKING:
    from workload_map.definitions.registry import DefinitionRegistry
    from workload_map.kube.reader import Reader
    from workload_map.kube.snapshot import SnapshotReader
    from workload_map.service.workloads import WorkloadService

EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_NO_DEFINITION = 0, 1, 2, 3, 4
EXIT_UNREACHABLE, EXIT_SERVE_FAILED = 5, 6
EXIT_BROKEN_PIPE = 128 + 13
EXIT_INTERRUPTED = 128 + 2
"""Ctrl-C (SIGINT), as a shell reports a process it ended: no traceback (``main.run``)."""
STDIN = "-"
STDIN_NAME = "<stdin>"

_stdin_text: str | None = None


def stdin_text() -> str:
    """Standard input, read once (later calls return the same text).

    Raises:
        InvalidRequest: stdin is not readable text.
    """
    global _stdin_text
    if _stdin_text is None:
        if sys.stdin is None:  # started with standard input closed (``<&-``)
            raise InvalidRequest(f"cannot read {STDIN_NAME}: standard input is closed")
        try:
            _stdin_text = sys.stdin.read()
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise InvalidRequest(f"cannot read {STDIN_NAME}: {exc}") from None
    return _stdin_text


def _stdin_objects() -> Iterator[dict[str, Any]]:
    """The objects in stdin, parsed exactly as a snapshot file (errors name ``<stdin>``)."""
    import tempfile  # here: only standard input needs it (an import of ~10 ms)

    from workload_map.kube.snapshot import SnapshotError, iter_objects

    with tempfile.TemporaryDirectory(prefix="wmap-") as directory:
        path = Path(directory) / "stdin.yaml"
        path.write_text(stdin_text(), encoding="utf-8")
        try:
            yield from iter_objects(path)
        except SnapshotError as exc:
            raise SnapshotError(str(exc).replace(str(path), STDIN_NAME)) from None


def snapshot_reader(paths: Sequence[str]) -> SnapshotReader:
    """A reader over every file or directory in ``paths`` (``-``: standard input).

    Objects are trimmed one at a time as they are read (``SnapshotReader`` consumes the
    iterator), so a big file is never held decoded whole.

    Raises:
        SnapshotError: unreadable input or a document that is not a Kubernetes object.
    """
    from workload_map.kube.snapshot import SnapshotReader, iter_objects

    return SnapshotReader(obj for path in paths for obj in (_stdin_objects() if path == STDIN else iter_objects(path)))


def snapshot_paths(paths: Sequence[str]) -> tuple[str, ...]:
    """``paths`` with ``-`` replaced by a file holding standard input.

    For readers that take paths, such as ``wmap serve``; the file is removed when the
    process exits.
    """
    if STDIN not in paths:
        return tuple(paths)
    import tempfile

    fd, name = tempfile.mkstemp(prefix="wmap-stdin-", suffix=".yaml")
    atexit.register(Path(name).unlink, missing_ok=True)  # before the write: a SIGTERM meanwhile removes it too
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(stdin_text())
    return tuple(name if path == STDIN else path for path in paths)


def shown(paths: Sequence[str]) -> str:
    """File arguments for messages (``-`` shown as ``<stdin>``)."""
    return ", ".join(STDIN_NAME if path == STDIN else path for path in paths)


def build_registry(definition_files: Sequence[str] = (), catalog_dir: str | None = None) -> DefinitionRegistry:
    """Catalog plus definitions from files (origin ``file``, which win over the catalog).

    The catalog's jq rule is deferred (``load_catalog(defer_jq=True)``):
    :func:`offline_service` checks the kinds an input holds before resolving. Files given
    with ``--definition`` are checked fully here.

    Raises:
        InvalidRequest / InvalidDefinition: a definition file is unreadable or invalid.
        DefinitionError: the catalog is empty or invalid.
    """
    from workload_map.definitions.catalog import load_catalog
    from workload_map.definitions.load import load_definition, load_documents
    from workload_map.definitions.registry import DefinitionRegistry

    registry = DefinitionRegistry(load_catalog(catalog_dir or default_catalog_dir(), defer_jq=True))
    for path in definition_files:
        for doc in load_documents(read_input(path), source=shown([path])):
            registry.register(load_definition(doc), origin="file")
    return registry


def offline_service(registry: DefinitionRegistry, reader: Reader, *, cluster: str = "") -> WorkloadService:
    """A not-started ``WorkloadService`` over ``reader``, the catalog checked for its kinds.

    Compiles the deferred jq expressions of the catalog entries whose group/kind the
    reader holds (a lookup falls back across versions, hence group/kind), in this process:
    the resolver child forked for the first read inherits the compiled programs.

    Raises:
        DefinitionError: a needed catalog entry has an invalid jq expression.
    """
    from workload_map.service.workloads import WorkloadService

    registry.catalog.check({gvk.group_kind for gvk in reader.states()})  # the kinds held or watched
    return WorkloadService(registry, reader, cluster=cluster)


def read_input(path: str) -> str:
    """The text of file ``path`` (``-``: standard input).

    Raises:
        InvalidRequest: the file cannot be read.
    """
    if path == STDIN:
        return stdin_text()
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as exc:
        raise InvalidRequest(f"cannot read {path}: {exc.strerror}") from None
