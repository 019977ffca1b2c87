"""Lenient reading of multi-document input: every document on its own, broken ones reported.

``wmap describe -f`` reads files people assembled by hand or piped from several commands:
one unparsable document must not lose every good workload in the file. Rules:

* a YAML stream is cut into documents at lines starting with ``---`` (the YAML document
  marker, column 0; a ``...`` end marker line ends a document), and each document is parsed
  alone, so a syntax error stays inside its document;
* a document whose text starts with ``{`` or ``[`` is read as JSON (exact integers, JSON
  errors), else as YAML, so JSON and YAML documents may be mixed in one stream;
* a file that starts like JSON and has no ``---`` line (``kubectl get -o json`` output,
  concatenated JSON values) is read by the streaming JSON reader of
  ``workload_map.kube.snapshot``; an error there keeps the objects read before it;
* list documents (``kind: List``, typed lists such as ``PodList``, a JSON array) are
  unwrapped; an item that is not an object is reported and the other items kept;
* a document that is not a Kubernetes object (no ``apiVersion``/``kind``, no
  ``metadata.name``, not a mapping) is reported and skipped.

Each problem is a message naming the file, the document number (1-based) and its first
line, e.g. ``pods.yaml (document 3, line 41): mapping values are not allowed here``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from workload_map.gvk import GVK
from workload_map.kube.snapshot import SnapshotError, _files, _json_objects, _list_kind, _with_kind
from workload_map.kube.store import object_key

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MARKER = re.compile(r"^(---|\.\.\.)(?=\s|$)", re.MULTILINE)


def read_documents(path: str | Path, shown: str | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """``(objects, problems)`` of a file or, recursively, a directory.

    Args:
        path: the file or directory.
        shown: the name used in messages for a single file (``<stdin>``); default: the path.

    Raises:
        SnapshotError: a file cannot be read at all (missing, not text).
    """
    objects: list[dict[str, Any]] = []
    problems: list[str] = []
    for file in _files(Path(path)):
        name = shown or str(file)
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SnapshotError(f"{name}: {exc}") from exc
        if (file.suffix.lower() == ".json" or text.lstrip()[:1] in ("{", "[")) and not _MARKER.search(text):
            _read_json(file, name, objects, problems)
        else:
            for number, line, chunk in _chunks(text):
                _read_chunk(chunk, f"{name} (document {number}, line {line})", line, objects, problems)
    return objects, problems


def _read_json(file: Path, name: str, objects: list[dict[str, Any]], problems: list[str]) -> None:
    try:
        for obj in _json_objects(file, fallback=file.suffix.lower() != ".json"):
            _keep(obj, f"{name} (object {len(objects) + 1})", objects, problems)
    except SnapshotError as exc:
        problems.append(str(exc).replace(str(file), name, 1))


def _chunks(text: str) -> Iterator[tuple[int, int, str]]:
    """``(document number, first line, text)`` of each non-empty document of a YAML stream."""
    starts = [0] + [m.start() for m in _MARKER.finditer(text) if m.start() > 0]
    number = 0
    for begin, end in zip(starts, starts[1:] + [len(text)]):
        chunk = text[begin:end]
        body = _MARKER.sub("", chunk, count=1) if _MARKER.match(chunk) else chunk
        if chunk.startswith("...") or not _content(body):
            continue
        number += 1
        yield number, text.count("\n", 0, begin) + 1, chunk


def _content(body: str) -> bool:
    """True when ``body`` holds more than blank lines and comments."""
    return any(line.strip() and not line.lstrip().startswith("#") for line in body.splitlines())


def _read_chunk(chunk: str, where: str, line: int, objects: list[dict[str, Any]], problems: list[str]) -> None:
    body = _MARKER.sub("", chunk, count=1) if chunk.startswith("---") else chunk
    try:
        doc = json.loads(body) if body.lstrip()[:1] in ("{", "[") else yaml.load(chunk, Loader=_Loader)
    except json.JSONDecodeError:
        try:  # a YAML flow mapping ({a: 1}) is not JSON
            doc = yaml.load(chunk, Loader=_Loader)
        except yaml.YAMLError as exc:
            problems.append(f"{where}: {_one_line(exc, line)}")
            return
    except yaml.YAMLError as exc:
        problems.append(f"{where}: {_one_line(exc, line)}")
        return
    if doc is None:
        return
    for item, item_where in _unwrap(doc, where, problems):
        _keep(item, item_where, objects, problems)


def _unwrap(doc: Any, where: str, problems: list[str]) -> Iterator[tuple[Any, str]]:
    """The objects of one document with their positions (list items unwrapped)."""
    if isinstance(doc, list):
        yield from ((item, f"{where}, item {i}") for i, item in enumerate(doc))
        return
    if isinstance(doc, dict) and isinstance(doc.get("items"), list) and (
            not isinstance(doc.get("kind"), str) or doc["kind"].endswith("List")):
        for i, item in enumerate(doc["items"]):
            if isinstance(item, dict):
                yield _with_kind(item, doc.get("apiVersion"), _list_kind(doc.get("kind"))), f"{where}, items[{i}]"
            else:
                problems.append(f"{where}: items[{i}] is not an object")
        return
    yield doc, where


def _keep(obj: Any, where: str, objects: list[dict[str, Any]], problems: list[str]) -> None:
    """Append ``obj`` when it is a Kubernetes object, else report why not."""
    if not isinstance(obj, dict):
        problems.append(f"{where}: expected a Kubernetes object, got {type(obj).__name__}")
        return
    try:
        GVK.of(obj)
    except ValueError as exc:
        problems.append(f"{where}: {exc}")
        return
    if object_key(obj) is None:
        problems.append(f"{where}: {obj.get('kind')} object without metadata.name")
        return
    objects.append(obj)


def _one_line(exc: Exception, first_line: int) -> str:
    """A parser message on one line (PyYAML's span several, with a source excerpt), lines of the file."""
    text = str(exc)
    problem = getattr(exc, "problem", None)
    mark = getattr(exc, "problem_mark", None)
    if isinstance(problem, str):
        text = problem + (f" at line {first_line + mark.line}, column {mark.column + 1}" if mark else "")
    return " ".join(text.split())
