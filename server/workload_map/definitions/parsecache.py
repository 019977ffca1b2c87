"""A content-addressed cache of the catalog's parsed YAML, for quick offline commands.

Parsing the 35 catalog files with libyaml (and the duplicate-key check) is about a quarter
of an offline ``wmap describe -f`` (~60 ms of ~250 ms on the reference machine,
``python -m benchmarks.startup``). The parsed documents of a catalog folder are kept as one
JSON file under ``$WMAP_CACHE_DIR`` (default ``$XDG_CACHE_HOME/workload-map-server``, else
``~/.cache/workload-map-server``), named by a BLAKE2b digest of every file name and byte,
so any edit, added or removed file misses the cache; its first line is a BLAKE2b checksum of
the JSON after it, so a changed or cut-short cache file misses too; reading it costs a few
milliseconds.

Only what parsed cleanly is cached, and only when JSON gives the same documents back (YAML
can hold non-string keys or timestamps JSON cannot); validation of the definitions always
runs on the documents, cached or not. Any failure to read or write the cache, or a cache file
that is not what this module writes for these files, falls back to parsing (a read-only home
in a container simply never caches); ``WMAP_CACHE_DIR=""`` turns it off.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from workload_map.definitions.load import load_documents
from workload_map.digests import blake2b

_VERSION = b"catalog-parse-v2"  # v2: the checksum line


def cache_dir() -> Path | None:
    """The cache folder, or None when ``WMAP_CACHE_DIR`` is set to the empty string."""
    configured = os.environ.get("WMAP_CACHE_DIR")
    if configured is not None:
        return Path(configured) if configured else None
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "workload-map-server"


def parsed_files(files: list[Path]) -> list[tuple[str, list[Any]]]:
    """``[(file name, documents)]`` of ``files`` in order, from the cache when it holds them.

    Raises:
        InvalidRequest: a file is not valid YAML or holds a key twice (never cached).
    """
    texts = [(path.name, path.read_bytes()) for path in files]
    digest = blake2b(_VERSION, digest_size=16)
    for name, data in texts:
        digest.update(name.encode() + b"\0" + len(data).to_bytes(8, "big") + data)
    folder = cache_dir()
    target = folder / f"catalog-{digest.hexdigest()}.json" if folder is not None else None
    if target is not None:
        try:
            cached = _entries(_checked(target.read_bytes()), [name for name, _ in texts])
        except (OSError, ValueError, RecursionError):  # RecursionError: JSON nested too deeply to decode
            cached = None
        if cached is not None:
            return cached
    parsed = [(name, load_documents(data.decode("utf-8"), source=name)) for name, data in texts]
    if target is not None:
        _store(target, parsed)
    return parsed


def _checksum(body: bytes) -> bytes:
    return blake2b(body, digest_size=16).hexdigest().encode()


def _checked(data: bytes) -> Any:
    """The JSON of a cache file whose first line is the checksum of the rest, else None.

    The checksum makes a changed or cut-short file a miss whatever is in it (a file of a
    valid shape holding documents no catalog parse gave, ``[["a.yaml", []]]``, was trusted
    and left every workload uncovered until deleted); the shape is checked as well.

    Raises:
        ValueError: the rest is not JSON (or not UTF-8).
        RecursionError: it nests too deeply to decode.
    """
    head, newline, body = data.partition(b"\n")
    if not newline or head != _checksum(body):
        return None
    return json.loads(body)


def _entries(cached: Any, names: list[str]) -> list[tuple[str, list[Any]]] | None:
    """``cached`` as ``[(file name, documents)]`` when it is what :func:`_store` writes for ``names``, else None.

    A cache file that is valid JSON of another shape (``[]``, ``{}``, a list cut short by a
    full disk, another tool's file) is not trusted: taken as it is, it gave a catalog without
    a definition, every workload uncovered, until the file was deleted. It is parsed again
    and rewritten instead.
    """
    if not isinstance(cached, list) or len(cached) != len(names):
        return None
    entries: list[tuple[str, list[Any]]] = []
    for item, name in zip(cached, names):
        if not (isinstance(item, list) and len(item) == 2 and item[0] == name and isinstance(item[1], list)):
            return None
        entries.append((name, item[1]))
    return entries


def _store(target: Path, parsed: list[tuple[str, list[Any]]]) -> None:
    """Write ``parsed`` atomically when JSON round-trips it exactly; errors are ignored."""
    import tempfile  # here: only a miss writes (tempfile imports shutil, bz2 and lzma: ~1.5 ms)

    try:
        text = json.dumps(parsed)
        if [tuple(item) for item in json.loads(text)] != parsed:
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        body = text.encode("utf-8")
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".catalog-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(_checksum(body) + b"\n" + body)
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):  # not renamed (a folder in the file's place, a full disk): no leftover
                os.unlink(tmp)
    except (OSError, TypeError, ValueError):
        return
