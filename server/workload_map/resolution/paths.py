"""Write locations: a definition's jq path turned into concrete JSON locations of one object.

A definition path is *writable* when it is a jq path expression this module can replay
without running jq (pure Python, no I/O):

* navigation steps ``.a``, ``."a"``, ``.["a"]``, ``.[0]``, ``.[-1]``, ``.[]`` (each may
  end with ``?``) and the identity ``.``;
* pipes of those, and ``select(NAV == LITERAL)`` / ``select(NAV != LITERAL)`` filters
  (``.spec.replicatedJobs[] | select(.name == "worker")``), NAV being navigation on the
  selected value and LITERAL a JSON string, number, boolean or null;
* ``A // B`` alternatives of those: as jq's ``path(A // B)``, the locations of A whose
  value is neither null nor false, else those of B
  (https://jqlang.org/manual/#alternative-operator).

Anything else (object construction, functions, arithmetic, ``if``) is refused with
:class:`NotWritable` naming the definition field and the expression. A location is a
tuple of object keys (str) and list indices (int); :func:`pointer` spells it as an RFC
6901 JSON Pointer.
"""

from __future__ import annotations

import json
import re
from typing import Any

from msgspec import Struct

from workload_map.errors import DefinitionError

Location = tuple[str | int, ...]
Step = tuple[Any, ...]

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_INT = re.compile(r"-?\d+")
_LITERAL = re.compile(r'\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null)\s*')
_SELECT = re.compile(r"select\s*\(")


class NotWritable(DefinitionError):
    """A definition path cannot be written through (422).

    Attributes:
        field: the definition field, e.g. ``spec...childComponents[0].specDefinition.podTemplateSpecPath``.
        expression: the jq text.
    """

    code = "not_writable"

    def __init__(self, field: str, expression: str, reason: str) -> None:
        self.field, self.expression = field, expression
        super().__init__(f"{field}: the path {expression!r} cannot be written through: {reason}")


class WritePath(Struct, frozen=True):
    """A parsed writable path.

    Attributes:
        expression: the jq source.
        field: the definition field it came from (named in errors).
        alternatives: the ``//`` branches, each a tuple of steps.
    """

    expression: str
    field: str
    alternatives: tuple[tuple[Step, ...], ...]

    def locate(self, obj: Any) -> list[Location]:
        """The concrete locations the expression denotes in ``obj``, in jq output order.

        Raises:
            NotWritable: jq would fail here (iterating or indexing a scalar).
        """
        last = len(self.alternatives) - 1
        for position, steps in enumerate(self.alternatives):
            found = _walk(steps, [((), obj)], self)
            if position == last:
                return [loc for loc, _ in found]
            truthy = [loc for loc, value in found if value is not None and value is not False]
            if truthy:
                return truthy
        return []


def parse_write_path(expression: str, field: str) -> WritePath:
    """Parse ``expression`` (from definition field ``field``) into a :class:`WritePath`.

    Raises:
        NotWritable: not a path expression of the grammar in the module docstring.
    """
    parts = _split(expression, "//")
    alternatives = tuple(_pipeline(part, expression, field) for part in parts)
    return WritePath(expression, field, alternatives)


def pointer(location: Location) -> str:
    """RFC 6901 JSON Pointer of ``location`` (``~`` -> ``~0``, ``/`` -> ``~1``)."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in location)


def thawed(value: Any) -> Any:
    """A copy of a JSON tree in which every map and list is its own.

    Use it (not ``copy.deepcopy``) before writing into a cached object: the cache shares
    equal sub-trees between and within objects (``workload_map.kube.compact``) and
    ``deepcopy`` keeps that aliasing, so a write at one place (the worker template of a
    JobSet) would also land at every place sharing it (the leader template). Scalars are
    shared (they are immutable).
    """
    cls = value.__class__
    if cls is dict:
        return {key: thawed(item) for key, item in value.items()}
    if cls is list:
        return [thawed(item) for item in value]
    return value


def value_at(obj: Any, location: Location) -> Any:
    """The value at ``location`` (None when a key or index is missing)."""
    for part in location:
        if isinstance(part, int) and isinstance(obj, list) and 0 <= part < len(obj):
            obj = obj[part]
        elif isinstance(part, str) and isinstance(obj, dict):
            obj = obj.get(part)
        else:
            return None
    return obj


def _split(text: str, separator: str) -> list[str]:
    """Split on ``separator`` outside string literals and parentheses."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        ch = text[i]
        if ch == '"':
            match = _STRING.match(text, i)
            i = match.end() if match else len(text)
            continue
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and text.startswith(separator, i) and not (separator == "|" and text.startswith("//", i)):
            parts.append(text[start:i])
            i += len(separator)
            start = i
            continue
        i += 1
    parts.append(text[start:])
    return parts


def _pipeline(text: str, expression: str, field: str) -> tuple[Step, ...]:
    steps: list[Step] = []
    for part in _split(text, "|"):
        part = part.strip()
        select = _SELECT.match(part)
        if select and part.endswith(")"):
            steps.append(("select", _condition(part[select.end():-1], expression, field)))
        else:
            steps.extend(_navigation(part, expression, field))
    return tuple(steps)


def _condition(text: str, expression: str, field: str) -> tuple[tuple[Step, ...], bool, Any]:
    for operator, equal in (("==", True), ("!=", False)):
        if operator in text:
            left, right = text.split(operator, 1)
            literal = _LITERAL.fullmatch(right)
            if literal is None:
                break
            return _navigation(left.strip(), expression, field), equal, json.loads(literal.group(1))
    raise NotWritable(field, expression, f"only select(PATH == LITERAL) filters are supported, not select({text})")


def _navigation(text: str, expression: str, field: str) -> tuple[Step, ...]:
    """Steps of a plain navigation such as ``.spec.replicatedJobs[0].template``."""
    if text == ".":
        return ()
    if not text.startswith("."):
        raise NotWritable(field, expression, f"{text!r} is not a path (it must start with '.')")
    steps: list[Step] = []
    i = 0
    while i < len(text):
        if text[i] == "?" and steps:
            steps[-1] = (steps[-1][0], steps[-1][1], True) if steps[-1][0] == "each" else steps[-1]
            i += 1
            continue
        if text[i] == ".":
            i += 1
            ident = _IDENT.match(text, i)
            string = _STRING.match(text, i)
            if ident:
                steps.append(("field", ident.group()))
                i = ident.end()
                continue
            if string:
                steps.append(("field", json.loads(string.group())))
                i = string.end()
                continue
            if i < len(text) and text[i] == "[":
                continue
        elif text[i] == "[":
            close = text.find("]", i)
            inner = text[i + 1:close].strip() if close > 0 else None
            if inner == "":
                steps.append(("each", None, False))
            elif inner is not None and _STRING.fullmatch(inner):
                steps.append(("field", json.loads(inner)))
            elif inner is not None and _INT.fullmatch(inner):
                steps.append(("index", int(inner)))
            else:
                raise NotWritable(field, expression, f"unsupported index [{inner}] in {text!r}")
            i = close + 1
            continue
        raise NotWritable(field, expression, f"unsupported syntax at {text[i:]!r} (only plain paths are writable)")
    return tuple(steps)


def _walk(steps: tuple[Step, ...], current: list[tuple[Location, Any]], path: WritePath) -> list[tuple[Location, Any]]:
    for step in steps:
        following: list[tuple[Location, Any]] = []
        for location, value in current:
            following.extend(_step(step, location, value, path))
        current = following
    return current


def _step(step: Step, location: Location, value: Any, path: WritePath) -> list[tuple[Location, Any]]:
    kind = step[0]
    if kind == "field":
        if value is None or isinstance(value, dict):
            return [((*location, step[1]), value.get(step[1]) if value else None)]
        raise NotWritable(path.field, path.expression, f"cannot index {type(value).__name__} with {step[1]!r}")
    if kind == "index":
        if value is None or isinstance(value, list):
            index = step[1] + len(value) if value is not None and step[1] < 0 else step[1]
            item = value[index] if value is not None and 0 <= index < len(value) else None
            return [((*location, index), item)]
        raise NotWritable(path.field, path.expression, f"cannot index {type(value).__name__} with {step[1]}")
    if kind == "each":
        if isinstance(value, list):
            return [((*location, i), item) for i, item in enumerate(value)]
        if isinstance(value, dict):
            return [((*location, key), value[key]) for key in sorted(value)]
        if step[2]:
            return []
        raise NotWritable(path.field, path.expression, f"cannot iterate over {type(value).__name__}")
    nav, equal, literal = step[1]
    outputs = [v for _, v in _walk(nav, [((), value)], path)]
    return [(location, value) for v in outputs if (v == literal) == equal]
