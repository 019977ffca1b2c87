"""Lenient reading of multi-document input: every document on its own, broken ones reported.

``wmap describe -f`` reads files people assembled by hand or piped from several commands:
one unparsable document must not lose every good workload in the file. Rules:

* a YAML stream is cut into documents at lines starting with ``---`` (the YAML document
  marker, column 0; a ``...`` end marker line ends a document), and each document is parsed
  alone, so a syntax error stays inside its document, and so do bytes that are not UTF-8
  (the document is reported with the first such byte; a file with no UTF-8 document at all
  fails as a whole, as before);
* a document whose text starts with ``{`` or ``[`` is read as JSON (exact integers, JSON
  errors), else as YAML, so JSON and YAML documents may be mixed in one stream;
* a file that starts like JSON and has no ``---`` line (``kubectl get -o json`` output,
  concatenated JSON values) is read by the streaming JSON reader of
  ``workload_map.kube.snapshot``; malformed JSON there keeps the objects read before it,
  and a well-formed value that cannot be decoded (nested about 1,000 levels deep, an
  integer of more than 4,300 digits) is reported and the values after it kept;
* list documents (``kind: List``, typed lists such as ``PodList``, a JSON array) are
  unwrapped; an item that is not an object is reported and the other items kept;
* a document that is not a Kubernetes object (no ``apiVersion``/``kind``, no
  ``metadata.name``, not a mapping) or lacks the shape readers rely on (a non-string
  namespace, a ``spec`` that is not an object: ``kube.store.shape_problem``) is reported and
  skipped.

Each problem is a message naming the file, the document number (1-based) and its first
line, e.g. ``pods.yaml (document 3, line 41): mapping values are not allowed here``.
"""

from __future__ import annotations

import codecs
import json
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from workload_map.gvk import GVK
from workload_map.kube.snapshot import SnapshotError, _files, _json_objects, _list_kind, _with_kind
from workload_map.kube.store import shape_problem
from workload_map.kube.yamljson import SURROGATE_ESCAPE, JSONLoader, decode_reason, without_surrogates

_UNDECODED = re.compile("[\udc80-\udcff]")
"""A byte that is not UTF-8, as ``errors="surrogateescape"`` decodes it."""
_MARKER = re.compile(r"^(---|\.\.\.)(?=\s|$)", re.MULTILINE)
_BLOCK = 1 << 20  # bytes read at a time when a file is sniffed
_CARRY = 8  # characters kept from one block to the next (a marker and its lookahead need 4)


def read_documents(path: str | Path, shown: str | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """``(objects, problems)`` of a file or, recursively, a directory (:func:`iter_documents`, listed).

    Raises:
        SnapshotError: a file cannot be read at all (missing, not text).
    """
    problems: list[str] = []
    return list(iter_documents(path, problems, shown)), problems


def iter_documents(path: str | Path, problems: list[str], shown: str | None = None) -> Iterator[dict[str, Any]]:
    """The objects of a file or, recursively, a directory, one at a time, in file order.

    A consumer that keeps each object trimmed (``SnapshotReader``) never holds the file's
    objects decoded all at once: a JSON dump is read item by item (``kube.jsonstream``),
    a YAML stream document by document.

    Args:
        path: the file or directory.
        problems: a message is appended for each broken document, as it is met.
        shown: the name used in messages for a single file (``<stdin>``); default: the path.

    Raises:
        SnapshotError: a file cannot be read at all (missing, not text).
    """
    if _is_pipe(Path(path)):  # ``<(kubectl get ...)``: read once (the sniff would consume it), then as a file
        import tempfile  # here: only a pipe needs it

        with tempfile.TemporaryDirectory(prefix="wmap-") as directory:
            copy = Path(directory) / "pipe.yaml"
            try:
                copy.write_bytes(Path(path).read_bytes())
            except OSError as exc:
                raise SnapshotError(f"{shown or path}: {exc}") from exc
            yield from iter_documents(copy, problems, shown or str(path))
        return
    kept = [0]  # objects yielded so far: JSON objects are numbered by it in messages
    for file in _files(Path(path)):
        name = shown or str(file)
        try:
            first, marked = _sniff(file, json_suffix=file.suffix.lower() == ".json")
        except (OSError, UnicodeDecodeError) as exc:
            raise SnapshotError(f"{name}: {exc}") from exc
        if (file.suffix.lower() == ".json" or first in ("{", "[")) and not marked:
            yield from _read_json(file, name, kept, problems)  # the JSON reader maps the file itself
        else:
            try:  # bytes that are not UTF-8 stay as lone surrogates: their document is reported
                text = file.read_text(encoding="utf-8", errors="surrogateescape")
            except OSError as exc:
                raise SnapshotError(f"{name}: {exc}") from exc
            undecoded: list[str] = []
            read = 0
            for number, line, chunk in _chunks(text):
                where = f"{name} (document {number}, line {line})"
                bad = _UNDECODED.search(chunk)
                if bad is not None:
                    at = line + chunk.count("\n", 0, bad.start())
                    undecoded.append(f"byte 0x{ord(bad.group()) - 0xDC00:02x} at line {at}")
                    problems.append(f"{where}: not UTF-8 text: {undecoded[-1]}")
                    continue
                read += 1
                yield from _read_chunk(chunk, where, line, kept, problems)
            if undecoded and not read:  # nothing of the file is text: the file fails as one
                del problems[-len(undecoded):]
                raise SnapshotError(f"{name}: not UTF-8 text ({undecoded[0]})")


def _is_pipe(path: Path) -> bool:
    try:
        return stat.S_ISFIFO(path.stat().st_mode)
    except OSError:
        return False


def _sniff(file: Path, json_suffix: bool) -> tuple[str, bool]:
    """``(first non-blank character, has a document marker line)`` of ``file``, read in blocks.

    The answers of decoding the whole text and searching it with ``_MARKER``, without holding
    the text (a 400 MB dump would be 400 MB more at the peak). The scan stops once the file is
    known not to be read as JSON (it is then read whole as YAML, which decodes it anyway).
    Bytes that are not UTF-8 are decoded as lone surrogates (``surrogateescape``): the
    readers report them where they are.

    Raises:
        OSError: the file cannot be read.
    """
    decoder = codecs.getincrementaldecoder("utf-8")(errors="surrogateescape")
    first, carry, line_start, marked = "", "", True, False  # line_start: the window starts a line
    with file.open("rb") as handle:
        while block := handle.read(_BLOCK):
            window = carry + decoder.decode(block)
            first = first or window.lstrip()[:1]
            marked = _marked(window, line_start, final=False)
            if marked or (first and first not in ("{", "[") and not json_suffix):
                return first, marked
            if len(window) > _CARRY:  # a marker cut by the block end is found again in the carry
                line_start, carry = window[-_CARRY - 1] == "\n", window[-_CARRY:]
            else:
                carry = window
        window = carry + decoder.decode(b"", final=True)
    return first or window.lstrip()[:1], _marked(window, line_start, final=True)


def _marked(window: str, line_start: bool, *, final: bool) -> bool:
    """``_MARKER`` in ``window`` at a true line start, its lookahead seen (or the file's end)."""
    return any((m.start() > 0 or line_start) and (final or m.end() < len(window)) for m in _MARKER.finditer(window))


def _read_json(file: Path, name: str, kept: list[int], problems: list[str]) -> Iterator[dict[str, Any]]:
    try:
        for obj in _json_objects(file, fallback=file.suffix.lower() != ".json", problems=problems, name=name):
            yield from _keep(obj, f"{name} (object {kept[0] + 1})", kept, problems)
    except SnapshotError as exc:
        problems.append(str(exc))


def _chunks(text: str) -> Iterator[tuple[int, int, str]]:
    """``(document number, first line, text)`` of each non-empty document of a YAML stream."""
    starts = [0] + [m.start() for m in _MARKER.finditer(text) if m.start() > 0]
    number, line = 0, 1
    for begin, end in zip(starts, starts[1:] + [len(text)]):
        chunk = text[begin:end]
        first, line = line, line + chunk.count("\n")  # counted chunk by chunk: once over the text, not per document
        body = _MARKER.sub("", chunk, count=1) if _MARKER.match(chunk) else chunk
        if chunk.startswith("...") or not _content(body):
            continue
        number += 1
        yield number, first, chunk


def _content(body: str) -> bool:
    """True when ``body`` holds more than blank lines and comments."""
    return any(line.strip() and not line.lstrip().startswith("#") for line in body.splitlines())


def _read_chunk(chunk: str, where: str, line: int, kept: list[int], problems: list[str]) -> Iterator[dict[str, Any]]:
    body = _MARKER.sub("", chunk, count=1) if chunk.startswith("---") else chunk
    try:
        doc = json.loads(body) if body.lstrip()[:1] in ("{", "[") else yaml.load(chunk, Loader=JSONLoader)
    except (RecursionError, ValueError) as exc:  # well-formed JSON json cannot decode: too deep, too many digits
        if not isinstance(exc, json.JSONDecodeError):
            problems.append(f"{where}: not decoded: {decode_reason(exc)}")
            return
        try:  # a YAML flow mapping ({a: 1}) is not JSON
            doc = yaml.load(chunk, Loader=JSONLoader)
        except yaml.YAMLError as error:
            problems.append(f"{where}: {_one_line(error, line)}")
            return
    except yaml.YAMLError as exc:
        problems.append(f"{where}: {_one_line(exc, line)}")
        return
    if doc is None:
        return
    if SURROGATE_ESCAPE.search(body):  # json reads a lone surrogate escape as one (kube.yamljson)
        doc = without_surrogates(doc)
    for item, item_where in _unwrap(doc, where, problems):
        yield from _keep(item, item_where, kept, problems)


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


def _keep(obj: Any, where: str, kept: list[int], problems: list[str]) -> Iterator[dict[str, Any]]:
    """``obj`` (counted in ``kept``) when it is a Kubernetes object, else nothing and why not in ``problems``."""
    if not isinstance(obj, dict):
        problems.append(f"{where}: expected a Kubernetes object, got {type(obj).__name__}")
        return
    try:
        GVK.of(obj)
    except ValueError as exc:
        problems.append(f"{where}: {exc}")
        return
    problem = shape_problem(obj)
    if problem is not None:
        meta = obj.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        shown = f" {name}" if isinstance(name, str) and name else ""
        problems.append(f"{where}: {obj.get('kind')}{shown}: {problem}" if problem != "no metadata.name"
                        else f"{where}: {obj.get('kind')} object without metadata.name")
        return
    kept[0] += 1
    yield obj


def _one_line(exc: Exception, first_line: int) -> str:
    """A parser message on one line (PyYAML's span several, with a source excerpt), lines of the file."""
    text = str(exc)
    problem = getattr(exc, "problem", None)
    mark = getattr(exc, "problem_mark", None)
    if isinstance(problem, str):
        text = problem + (f" at line {first_line + mark.line}, column {mark.column + 1}" if mark else "")
    return " ".join(text.split())
