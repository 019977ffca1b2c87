"""Bounded incremental JSON reading with msgspec: one value at a time from a mapped file.

The common dump is one JSON document of a gigabyte (``kubectl get -o json``: a list whose
``items`` hold every object). ``JSONStream`` maps the file (``mmap``: its pages belong to
the page cache, not to the heap) and walks the structure itself (top-level values,
members of a top-level object, elements of an array) while msgspec's C decoder does the
work per value: it finds where a value ends (decoding it as ``msgspec.Raw``, which only
scans, and reading the end from the ``trailing characters (byte N)`` it reports) and then
decodes exactly that slice. Pages already consumed are handed back to the kernel
(``madvise(MADV_DONTNEED)`` every ``RELEASE`` bytes), so the resident size stays a window
of the file whatever its size. On the benchmark dump (27,249 objects, 224 MB of indented
JSON) parsing takes 0.9 s of CPU where the standard library's scanner with an interning
hook took 2.2 s (this module's reader before msgspec).

Strings: msgspec shares one string object per distinct short key (its key cache); the
store shares short values when it keeps a trimmed object.

What msgspec refuses and the standard library's ``json`` accepts (``NaN``, ``Infinity``,
numbers beyond float64) is decoded by ``json`` for that one value. Malformed text raises
``workload_map.kube.jsonstream.JSONStreamError`` with the line, column and character
offset of the standard library's diagnosis; ``JSONStream`` offers the interface of
``JSONStream`` (``peek``, ``expect``, ``value``, ``elements``, ``members``), so the
snapshot reader walks either.

Well-formed values that cannot be decoded (nested deeper than the interpreter's recursion
limit allows, about 1,000 levels; an integer of more than ``sys.get_int_max_str_digits()``
digits, 4,300 by default) raise ``JSONValueError`` with the stream already past the value:
the reader reports that one value and goes on with the next.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from workload_map.kube.yamljson import SURROGATE_ESCAPE, decode_reason, without_surrogates

MAX_VALUE = 16 << 20
"""The most bytes one value may span before it is reported as malformed."""

RELEASE = 16 << 20
"""Bytes consumed between two hand-backs of mapped pages to the kernel."""

_SCAN = msgspec.json.Decoder(msgspec.Raw)
_VALUE = msgspec.json.Decoder()
_TRAILING = re.compile(r"trailing characters \(byte (\d+)\)")
_BLANK = re.compile(rb"[ \t\n\r]*")
_STDLIB = json.JSONDecoder()
_SKIP = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[{]+|[\]}]+|[^"\[\]{}]+')
"""Tokens of a value skipped without decoding: a string, a run of openers, a run of closers, anything else."""


class JSONStreamError(ValueError):
    """Malformed JSON; ``line`` and ``column`` are 1-based, ``offset`` 0-based characters."""

    def __init__(self, message: str, *, line: int, column: int, offset: int) -> None:
        super().__init__(f"invalid JSON at line {line} column {column} (char {offset}): {message}")
        self.line, self.column, self.offset = line, column, offset


class JSONValueError(JSONStreamError):
    """A well-formed value that cannot be decoded (too deep, too many digits); the stream is past it."""

    def __init__(self, message: str, *, line: int, column: int, offset: int) -> None:
        ValueError.__init__(self, f"the value at line {line} column {column} (char {offset}) is not decoded: {message}")
        self.line, self.column, self.offset = line, column, offset


class JSONStream:
    """A mapped JSON file and the byte position in it (use as a context manager).

    Args:
        file: the file to read.

    Raises:
        OSError: the file cannot be opened.
    """

    def __init__(self, file: Path) -> None:
        self._handle = file.open("rb")
        try:
            self._map: mmap.mmap | None = mmap.mmap(self._handle.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # an empty file cannot be mapped: no documents
            self._map = None
        self._view = memoryview(self._map) if self._map is not None else memoryview(b"")
        self.pos, self._released = 0, 0
        self._where = (0, 0, 0, -1)  # the last position ``error`` named: (byte, characters, newlines, last newline)
        if bytes(self._view[:3]) == b"\xef\xbb\xbf":  # a UTF-8 byte order mark (Windows editors): not JSON text
            self.pos = 3

    def __enter__(self) -> JSONStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self._view.release()
        if self._map is not None:
            with contextlib.suppress(BufferError):  # a decoded slice still referenced: unmapped when collected
                self._map.close()
        self._handle.close()

    def peek(self) -> str:
        """The next non-whitespace character (ASCII; a byte of a wider one), not consumed (``""`` at the end)."""
        blank = _BLANK.match(self._view, self.pos)
        assert blank is not None  # the pattern matches the empty string anywhere
        self.pos = blank.end()
        return bytes(self._view[self.pos:self.pos + 1]).decode("latin-1")

    def expect(self, chars: str) -> str:
        """Consume the next non-whitespace character, one of ``chars`` (ASCII).

        Raises:
            JSONStreamError: another character or the end of the file.
        """
        char = self.peek()
        if not char or char not in chars:
            found = repr(char) if char else "end of file"
            raise self.error(f"expected {' or '.join(repr(c) for c in chars)}, found {found}", self.pos)
        self.pos += 1
        return char

    def value(self) -> Any:
        """Decode the next whole value and move past it.

        Raises:
            JSONStreamError: malformed, longer than ``MAX_VALUE`` bytes, or end of file.
            JSONValueError: well-formed but nested too deeply or an integer with too many
                digits to decode; or an object or array that is malformed inside (a bad
                escape, a stray character) but whose brackets close within ``MAX_VALUE``
                bytes (``_skipped_end``), its message the diagnosis. The stream is
                positioned after the value, so a reader reports it and goes on.
        """
        if not self.peek():
            raise self.error("expected a value, found end of file", self.pos)
        start, end = self.pos, None
        try:
            end = self._end_of_value(start)
            if end - start > MAX_VALUE:
                raise self.error(f"a value longer than {MAX_VALUE} bytes", start)
            try:
                result = _VALUE.decode(self._view[start:end])
            except msgspec.MsgspecError:
                result, end = self._stdlib_value(start, end)
        except JSONValueError:
            raise
        except JSONStreamError as exc:  # malformed: an object or array is skipped by its brackets
            if bytes(self._view[start:start + 1]) not in (b"{", b"["):
                raise
            try:
                self.pos = self._skipped_end(start)
            except JSONStreamError:
                raise exc from None
            raise self._refused(str(exc), start) from None
        except (RecursionError, ValueError) as exc:  # well-formed but not decodable: skip it
            self.pos = self._skipped_end(start) if end is None else end
            raise self._refused(decode_reason(exc), start) from None
        self.pos = end
        self._release()
        return result

    def elements(self) -> Iterator[None]:
        """Enter an array: yield once per element, positioned on it (consume it first).

        Raises:
            JSONStreamError: not an array, or malformed separators.
        """
        self.expect("[")
        if self.peek() == "]":
            self.pos += 1
            return
        while True:
            yield None
            if self.expect(",]") == "]":
                return

    def members(self) -> Iterator[str]:
        """Enter an object: yield each key, positioned on its value (consume it first).

        Raises:
            JSONStreamError: not an object, a non-string key, or malformed separators.
        """
        self.expect("{")
        if self.peek() == "}":
            self.pos += 1
            return
        while True:
            if self.peek() != '"':
                raise self.error("expected a string key", self.pos)
            key = self.value()
            self.expect(":")
            yield key
            if self.expect(",}") == "}":
                return

    def error(self, message: str, at: int) -> JSONStreamError:
        """A ``JSONStreamError`` at byte ``at``, with 1-based line and column in characters.

        The text is counted from the furthest position named so far, not from the start
        each time: a file of many malformed items took time quadratic in its size (4 MB with
        30,000 bad items: about 110 s). A position before it (a value's start, named after
        a diagnosis inside the value) is counted back from it.
        """
        byte, chars, lines, last = self._where
        if at >= byte:
            segment = self._text(byte, at)
            newline = segment.rfind("\n")
            lines, last = lines + segment.count("\n"), chars + newline if newline >= 0 else last
            chars += len(segment)
            self._where = (at, chars, lines, last)
            return JSONStreamError(message, line=lines + 1, column=chars - last, offset=chars)
        segment = self._text(at, byte)
        chars, lines = chars - len(segment), lines - segment.count("\n")
        if "\n" in segment:  # the last newline before ``at``: found in the bytes ("\n" is one byte in UTF-8)
            newline = self._map.rfind(b"\n", 0, at) if self._map is not None else -1
            last = chars - len(self._text(newline + 1, at)) - 1 if newline >= 0 else -1
        return JSONStreamError(message, line=lines + 1, column=chars - last, offset=chars)

    def _text(self, start: int, end: int) -> str:
        """The characters of bytes ``start:end`` (an invalid byte is one U+FFFD)."""
        return bytes(self._view[start:end]).decode("utf-8", "replace")

    def _refused(self, reason: str, start: int) -> JSONValueError:
        """A ``JSONValueError`` for the value at byte ``start`` (positions as ``error``)."""
        where = self.error(reason, start)
        return JSONValueError(reason, line=where.line, column=where.column, offset=where.offset)

    def _skipped_end(self, start: int) -> int:
        """The byte just past the container at ``start``, found by counting brackets, not decoding.

        For a container too deep for the decoders; it is not checked beyond its brackets
        and strings (it is refused anyway).

        Raises:
            JSONStreamError: the brackets do not close within ``MAX_VALUE`` bytes.
        """
        depth, limit = 0, min(len(self._view), start + MAX_VALUE)
        for token in _SKIP.finditer(self._view, start, limit):
            first = token.group()[:1]
            if first in (b"[", b"{"):
                depth += token.end() - token.start()
            elif first in (b"]", b"}"):
                closed = token.end() - token.start()
                if closed >= depth:
                    return token.start() + depth
                depth -= closed
        raise self.error(f"a value whose brackets do not close within {MAX_VALUE} bytes", start)

    def _end_of_value(self, start: int) -> int:
        """The byte just past the value at ``start`` (msgspec scans it without decoding).

        Raises:
            RecursionError: nested deeper than the scan (or ``json``) allows.
            ValueError: ``json`` refused an integer of too many digits (a value msgspec
                does not scan, e.g. with ``NaN``, so its end is not known).
            JSONStreamError: malformed.
        """
        try:
            _SCAN.decode(self._view[start:])
            return len(self._view)
        except msgspec.MsgspecError as exc:
            match = _TRAILING.search(str(exc))
            if match is None:
                return self._stdlib_value(start, self._bracket_end(start))[1]
        # msgspec reports the byte after the first trailing character, past any whitespace
        return start + int(match.group(1)) - 1

    def _bracket_end(self, start: int) -> int | None:
        """Where the object or array at ``start`` ends by its brackets (``_skipped_end``), else None.

        So that ``json`` diagnoses a malformed container from its own bytes, not from the
        ``MAX_VALUE`` bytes after its start: once per bad item, that made a file of many
        bad items quadratic (4 MB with 17,000: most of 10 s in copying and decoding).
        """
        if bytes(self._view[start:start + 1]) not in (b"{", b"["):
            return None
        try:
            return self._skipped_end(start)
        except JSONStreamError:
            return None

    def _stdlib_value(self, start: int, end: int | None = None) -> tuple[Any, int]:
        """The value at ``start`` decoded by ``json`` (``NaN``, huge numbers) and its end.

        ``end``: where the value ends when already known (only that much text is decoded,
        not ``MAX_VALUE`` bytes for every value: quadratic on a file of many bad items).

        Raises:
            JSONStreamError: malformed (diagnosed within ``MAX_VALUE`` bytes).
            RecursionError: nested too deeply for ``json``.
            ValueError: an integer of more digits than ``sys.get_int_max_str_digits()``.
        """
        text = bytes(self._view[start:end if end is not None else start + MAX_VALUE + 1]).decode("utf-8", "ignore")
        try:
            result, end = _STDLIB.raw_decode(text)
        except json.JSONDecodeError as exc:
            raise self.error(exc.msg, start + len(text[:exc.pos].encode())) from None
        if SURROGATE_ESCAPE.search(text, 0, end):  # a lone surrogate reads as U+FFFD (kube.yamljson)
            result = without_surrogates(result)
        return result, start + len(text[:end].encode())

    def _release(self) -> None:
        """Hand consumed pages back to the kernel every ``RELEASE`` bytes."""
        if self._map is None or self.pos - self._released < RELEASE or not hasattr(self._map, "madvise"):
            return
        cut = self.pos - self.pos % mmap.PAGESIZE
        self._map.madvise(mmap.MADV_DONTNEED, self._released, cut - self._released)
        self._released = cut
