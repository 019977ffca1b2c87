"""Where registered definitions persist.

The :class:`DefinitionStore` protocol and the offline :class:`DirectoryStore`.

Two stores implement the protocol:

* :class:`DirectoryStore` (origin ``state``), used offline (snapshot source): one YAML
  file per definition under ``settings.state_dir``, written atomically (temporary file,
  ``fsync``, ``rename``, ``fsync`` of the directory), reloaded at start;
* ``workload_map.kube.kartas.KartaStore`` (origin ``cluster``), used against a cluster: one
  ``kartas.run.ai`` custom resource per definition.

Both return :class:`~workload_map.definitions.stored.StoredDefinition` and raise
:class:`~workload_map.definitions.stored.StoreError`.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

import yaml

from workload_map.definitions.load import load_documents
from workload_map.definitions.stored import StoredDefinition, StoreError
from workload_map.errors import ServerError
from workload_map.logs import logger

log = logger(__name__)


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
        """Write ``<key>.yaml`` atomically.

        Raises:
            StoreError: any OS error (the previous file, if any, is left intact).
        """
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
        """Remove ``<key>.yaml``; False when it was not there.

        Raises:
            StoreError: an OS error other than absence.
        """
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
        """Every ``*.yaml``/``*.yml``/``*.json`` file (temporary files ignored).

        Returns:
            One record per file, sorted by file name; an unreadable file (or one holding
            other than exactly one document) has ``document`` None so the caller reports it.
        """
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
