r"""YAML read into JSON's types: the loader of snapshot files and ``describe -f`` manifests.

A Kubernetes object is JSON: the API server stores and serves JSON, and kubectl turns a
YAML manifest into JSON before sending it. YAML's safe schema knows more types than JSON,
so ``yaml.safe_load`` of a hand-written manifest can give values no live object holds:
an unquoted ``2024-01-01T00:00:00Z`` becomes a ``datetime``, ``2024-01-01`` a ``date``,
and the explicit tags ``!!binary``, ``!!set``, ``!!omap`` and ``!!pairs`` give ``bytes``,
a ``set`` and lists of tuples. :class:`JSONLoader` (libyaml's ``CSafeLoader`` when PyYAML
has it, else ``SafeLoader``) constructs those as the JSON they stand for instead:

- a timestamp is the text written (``"2024-01-01T00:00:00Z"``, as in a live object);
- ``!!binary`` is its base64 text without the line breaks (a Secret's ``data`` values
  are base64 strings in JSON), refused as by the safe loader when it is not base64;
- ``!!set`` is a map of its members to null (a YAML set is such a map);
- ``!!omap`` and ``!!pairs`` are lists of one-entry maps (how they are written);
- a lone UTF-16 surrogate in a string or key (a ``"\ud800"`` escape without its pair)
  is U+FFFD, as the API server's JSON decoder reads it (Go's ``encoding/json``: "invalid
  UTF-16 surrogate pairs are ... replaced by the Unicode replacement character U+FFFD"), so
  no object here holds text a cluster could not (it broke the UTF-8 encoding of every JSON
  answer and of the text output): :func:`without_surrogates`, also used on JSON decoded
  by the standard library (msgspec refuses such escapes);
- an integer of more decimal digits than Python converts (``sys.get_int_max_str_digits()``,
  4,300 by default) is refused with a ``ConstructorError`` naming its line, as the JSON
  reader refuses one (the safe loader raised a bare ``ValueError``, which lost the file);
- a mapping key that is not a string is the string kubectl's YAML-to-JSON conversion makes
  of it (sigs.k8s.io/yaml, ``yamlToJSONTarget``: an integer in decimal, ``true``/``false``,
  a float in its shortest float32 form, ``.inf``/``-.inf``/``.nan``), as JSON keys are
  strings: a label map ``{5: six}`` is ``{"5": "six"}``; any other key (null, a list, a
  map) is refused with a ``ConstructorError`` naming its line, as kubectl refuses it.

Everything else is as the safe loader gives it. The cache's compaction relies on this
(``workload_map.kube.compact``: its table is exact for JSON's types).

Aliases: an alias is the node of its anchor again, so a few lines can stand for billions
of values ("billion laughs": nine anchors of nine aliases each are 387 million strings),
and every reader of the object (the compaction, JSON encoding, jq) walks them all. Each
alias met while a document is constructed adds the expanded size of its anchor (counted on
the node graph, each node once): when the aliases of one document add more than
``MAX_ALIAS_VALUES`` values or ``MAX_ALIAS_CHARACTERS`` characters of scalars, or an alias
sits inside its own anchor (a structure without end), the document is refused with a ``yaml.constructor.ConstructorError`` naming the line,
which the readers report like any YAML error. A document without aliases (every
``kubectl`` output) costs one dictionary lookup per node more and passes whatever its size.
"""

from __future__ import annotations

import base64
import binascii
import io
import os
import re
import struct
from typing import Any, TextIO

import yaml
from yaml.constructor import ConstructorError

_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

MAX_ALIAS_VALUES = 1_000_000
"""Most values the aliases of one document may add to it once expanded (module docstring)."""

MAX_ALIAS_CHARACTERS = 16 * 1024 * 1024
"""Most scalar characters the aliases of one document may add to it once expanded: a long
string aliased a few hundred times is few values but hundreds of megabytes to every reader."""


_SURROGATE = re.compile("[\ud800-\udfff]")
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
"""A JSON or YAML escape of a UTF-16 surrogate in source text: only then can decoding give one."""


def without_surrogates(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings and keys replaced by U+FFFD.

    Returns the same object when nothing had to change (the common case: a walk, no copy).
    """
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if not value.isascii() else value
    if isinstance(value, dict):
        items = [(without_surrogates(k), without_surrogates(v)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items())):
            return value
        return dict(items)
    if isinstance(value, list):
        items = [without_surrogates(v) for v in value]
        return value if all(a is b for a, b in zip(items, value)) else items
    return value


class JSONLoader(_Base):  # type: ignore[misc]  # the base is chosen at import time
    """The safe loader with YAML's extra types constructed as JSON (module docstring)."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        # no "&": no anchor, so no alias either (an alias names an anchor written before it)
        self._plain = isinstance(stream, str) and "&" not in stream

    def construct_document(self, node: yaml.Node) -> Any:
        """The document of ``node``; its aliases are counted as they are met (module docstring).

        A text without anchors is first constructed by :func:`_plain_value` (a direct walk
        of the node tree, about a tenth of the safe constructor's time: 0.16 against 1.7 ms
        for a 24 KB JobSet manifest); whatever that walk does not take exactly as the safe
        constructor would (a key that is not a string, a merge key, a tag of its own, an
        error) makes it give up, and the document is constructed the safe constructor's way,
        its errors included.
        """
        if self._plain:
            try:
                return _plain_value(self, node, self.yaml_constructors)
            except Exception:  # noqa: BLE001  # any doubt: the safe constructor decides, and raises its own error
                pass
        self._alias_values = self._alias_characters = 0
        self._sizes: dict[int, tuple[int, int]] = {}  # node identity -> expanded size (``expanded_size``)
        return super().construct_document(node)

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        """The object of ``node``; an alias (its node constructed already) adds its expanded size.

        Raises:
            yaml.constructor.ConstructorError: the document's aliases add more than
                ``MAX_ALIAS_VALUES`` values, or one sits inside its own anchor.
        """
        if node in self.constructed_objects:  # the anchor's node again: an alias
            values, characters = expanded_size(node, self._sizes)
            self._alias_values += values
            self._alias_characters += characters
            if self._alias_values > MAX_ALIAS_VALUES or self._alias_characters > MAX_ALIAS_CHARACTERS:
                raise ConstructorError(None, None, f"its aliases expand it by more than {MAX_ALIAS_VALUES:,} values or "
                                       f"{MAX_ALIAS_CHARACTERS:,} characters (YAML anchors and aliases); write the "
                                       "document without them", node.start_mark)
        return super().construct_object(node, deep)


WHOLE_TEXT_BYTES = 4 * 1024 * 1024
"""Largest YAML file :func:`whole_or_stream` reads whole."""


def whole_or_stream(handle: TextIO) -> str | TextIO:
    """The whole text of the file open in ``handle`` when it is at most :data:`WHOLE_TEXT_BYTES`, else ``handle``.

    :class:`JSONLoader` builds a text without anchors with its direct walk, which it can
    only know of a text it holds whole; a bigger file is parsed as it is read (bounded memory).
    """
    try:
        small = os.fstat(handle.fileno()).st_size <= WHOLE_TEXT_BYTES
    except (OSError, ValueError, io.UnsupportedOperation):  # not a file of its own (a pipe, a buffer)
        small = False
    return handle.read() if small else handle


_STR, _MAP, _SEQ = "tag:yaml.org,2002:str", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"
_PLAIN_SCALARS = frozenset({"tag:yaml.org,2002:null", "tag:yaml.org,2002:bool", "tag:yaml.org,2002:int",
                            "tag:yaml.org,2002:float", "tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:binary"})
"""Scalar tags :func:`_plain_value` constructs with the loader's own constructor (each gives a value at once)."""


class _NotPlain(Exception):
    """Part of a document :func:`_plain_value` leaves to the safe constructor."""


def _plain_value(loader: Any, node: yaml.Node, constructors: dict[str, Any]) -> Any:
    """The JSON value of ``node`` (a tree without aliases), as the safe constructor builds it.

    Strings, maps and lists are built here; the other scalars of :data:`_PLAIN_SCALARS` by
    the loader's constructors (``_int``, ``_text``...). Duplicate keys: the last value wins,
    in the first one's place, as the safe constructor's assignment does.

    Raises:
        _NotPlain: a key that is not a string (``true`` and ``1`` are one key to the safe
            constructor's dict), a merge or value key (``<<``, ``=``), or a tag of its own.
        RecursionError, yaml.YAMLError, ValueError: as the constructors (the caller starts again).
    """
    cls = node.__class__
    if cls is yaml.ScalarNode:
        tag = node.tag
        if tag == _STR:
            value: str = node.value
            return value if value.isascii() else _SURROGATE.sub("\ufffd", value)
        if tag in _PLAIN_SCALARS:
            return constructors[tag](loader, node)
        raise _NotPlain(tag)
    if cls is yaml.MappingNode and node.tag == _MAP:
        data: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.__class__ is not yaml.ScalarNode or key_node.tag != _STR:
                raise _NotPlain("key")
            key: str = key_node.value
            data[key if key.isascii() else _SURROGATE.sub("\ufffd", key)] = _plain_value(loader, value_node,
                                                                                       constructors)
        return data
    if cls is yaml.SequenceNode and node.tag == _SEQ:
        return [_plain_value(loader, item, constructors) for item in node.value]
    raise _NotPlain(node.tag)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def expanded_size(root: yaml.Node, sizes: dict[int, tuple[int, int]]) -> tuple[int, int]:
    """``(values, characters)`` under ``root`` with every alias expanded.

    A scalar is one value of its text's characters, a collection one value plus its items.
    Each node is visited once (depth first; ``sizes`` memoizes by node identity, across
    calls within one document), so this is linear in the nodes however far they expand.

    Raises:
        yaml.constructor.ConstructorError: a node is its own descendant (an alias inside
            its own anchor: a structure without end).
    """
    open_nodes: set[int] = set()  # the path from root to the node being counted
    stack: list[tuple[yaml.Node, list[yaml.Node] | None]] = [(root, None)]  # children once listed: counted next
    while stack:
        node, children = stack.pop()
        if children is not None:
            open_nodes.discard(id(node))
            if isinstance(node, yaml.ScalarNode):
                sizes[id(node)] = (1, len(node.value))
            else:
                parts = [sizes[id(child)] for child in children]
                sizes[id(node)] = (1 + sum(v for v, _ in parts), sum(c for _, c in parts))
            continue
        if id(node) in sizes:
            continue
        if id(node) in open_nodes:
            raise ConstructorError(None, None, "an alias inside its own anchor (a structure without end); write "
                                   "the document without anchors and aliases", node.start_mark)
        open_nodes.add(id(node))
        children = _children(node)
        stack.append((node, children))
        stack.extend((child, None) for child in children if id(child) not in sizes)
    return sizes[id(root)]


def _str(loader: Any, node: yaml.ScalarNode) -> str:
    return str(without_surrogates(str(loader.construct_scalar(node))))


def _text(loader: Any, node: yaml.ScalarNode) -> str:
    return str(loader.construct_scalar(node))


def _base64(loader: Any, node: yaml.ScalarNode) -> str:
    text = "".join(str(loader.construct_scalar(node)).split())
    try:
        base64.decodebytes(text.encode("ascii"))
    except (binascii.Error, UnicodeEncodeError) as exc:  # as the safe loader refuses it
        raise ConstructorError(None, None, f"failed to decode base64 data: {exc}", node.start_mark) from None
    return text


def decode_reason(exc: RecursionError | ValueError) -> str:
    """Why a decoder refused a well-formed value, on one line.

    ``RecursionError``: nested too deeply; ``ValueError``: an integer of more digits than
    ``int()`` converts (``sys.get_int_max_str_digits()``).
    """
    if isinstance(exc, RecursionError):
        return "nested too deeply (the decoders stop near the interpreter's recursion limit, 1,000 levels)"
    return str(exc).replace("; use sys.set_int_max_str_digits() to increase the limit", "")


def _int(loader: Any, node: yaml.ScalarNode) -> int:
    try:
        return int(yaml.constructor.SafeConstructor.construct_yaml_int(loader, node))
    except ValueError as exc:  # more digits than int() converts
        raise ConstructorError(None, None, f"an integer that cannot be read: {decode_reason(exc)}",
                               node.start_mark) from None


def _json_key(key: Any, node: yaml.Node) -> str:
    """The JSON key of a YAML mapping key (module docstring).

    Raises:
        yaml.constructor.ConstructorError: a key that is not a string, number or boolean.
    """
    cls = key.__class__
    if cls is str:
        return str(key)  # the same object
    if cls is bool:
        return "true" if key else "false"
    if cls is int:
        return str(key)
    if cls is float:
        return _float32_text(key)
    raise ConstructorError(None, None, f"a mapping key that is not a string, number or boolean ({type(key).__name__}): "
                           "JSON has none (kubectl refuses it too)", node.start_mark)


def _float32_text(value: float) -> str:
    """``value`` as Go's ``strconv.FormatFloat(value, 'g', -1, 32)`` writes it, YAML's names for the non-finite.

    The shortest digits that read back as the same float32; exponent form (``1.5e+07``,
    two exponent digits at least) when the decimal exponent is below -4 or 6 and above,
    else plain (``100000``, ``0.0001``), as Go's ``'g'`` with the shortest precision.
    """
    if value != value:
        return ".nan"
    try:
        single = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:  # beyond float32: an infinity, as Go's conversion gives
        single = value * float("inf")
    if single in (float("inf"), float("-inf")):
        return ".inf" if single > 0 else "-.inf"
    if single == 0:
        return "-0" if str(single).startswith("-") else "0"
    for places in range(9):  # the shortest text that reads back as the same float32
        text = f"{abs(single):.{places}e}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == abs(single):
            break
    mantissa, _, power = text.partition("e")
    digits, exponent = mantissa.replace(".", "").rstrip("0") or "0", int(power)
    sign = "-" if single < 0 else ""
    if exponent < -4 or exponent >= 6:
        fraction = f".{digits[1:]}" if len(digits) > 1 else ""
        return f"{sign}{digits[0]}{fraction}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    if exponent < 0:
        return f"{sign}0.{'0' * (-exponent - 1)}{digits}"
    whole = digits[:exponent + 1].ljust(exponent + 1, "0")
    rest = digits[exponent + 1:]
    return f"{sign}{whole}.{rest}" if rest else f"{sign}{whole}"


def _map(loader: Any, node: yaml.MappingNode) -> Any:
    data: dict[str, Any] = {}
    yield data  # as the safe loader: the map exists before its values (an alias may name it)
    value = loader.construct_mapping(node)
    if all(key.__class__ is str for key in value):  # nearly always
        data.update(value)
    else:
        data.update((_json_key(key, node), item) for key, item in value.items())


def _members(loader: Any, node: yaml.MappingNode) -> dict[Any, None]:
    return dict.fromkeys(_json_key(key, node) for key in loader.construct_mapping(node, deep=True))


def _entries(loader: Any, node: yaml.SequenceNode) -> list[Any]:
    return list(loader.construct_sequence(node, deep=True))


JSONLoader.add_constructor("tag:yaml.org,2002:str", _str)
JSONLoader.add_constructor("tag:yaml.org,2002:int", _int)
JSONLoader.add_constructor("tag:yaml.org,2002:timestamp", _text)
JSONLoader.add_constructor("tag:yaml.org,2002:binary", _base64)
JSONLoader.add_constructor("tag:yaml.org,2002:set", _members)
JSONLoader.add_constructor("tag:yaml.org,2002:map", _map)
JSONLoader.add_constructor("tag:yaml.org,2002:omap", _entries)
JSONLoader.add_constructor("tag:yaml.org,2002:pairs", _entries)
