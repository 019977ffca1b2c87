"""Pure-Python evaluation of simple jq paths, with results identical to jq.

Most definition paths are plain navigation (``.spec.template``,
``.metadata.labels["ray.io/group"]``, ``.spec.replicatedJobs[].name``,
``.spec.replicas // 1``). Serializing a whole object to JSON for jq costs far more than
walking a few dict keys, so such paths are evaluated here.

Grammar accepted (anything else returns ``None`` from :func:`parse_fast_path` and is left
to jq)::

    path     := '.' | ( '.' ident | '."str"' | '["str"]' | '[' int ']' | '[]' )+
    pipeline := path ( '|' path )*
    expr     := pipeline ( '//' ( pipeline | literal ) )?
    literal  := JSON number | JSON string | true | false | null

Identity rule: whenever jq would raise (indexing a number, iterating null, ...) the fast
path gives up (``evaluate`` returns ``None``) and the caller runs real jq, so error
messages and ``//`` error suppression stay exactly jq's.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_IDENT = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)")
_QUOTED_FIELD = re.compile(r'\.?\[\s*("(?:[^"\\]|\\.)*")\s*\]|\.("(?:[^"\\]|\\.)*")')
_INDEX = re.compile(r"\.?\[\s*(-?\d+)\s*\]")
_ITER = re.compile(r"\.?\[\s*\]")
_LITERAL = re.compile(r'\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|"(?:[^"\\]|\\.)*"|true|false|null)\s*$')

_FIELD, _INDEX_OP, _ITER_OP = 0, 1, 2
_GIVE_UP = object()


@dataclass(frozen=True, slots=True)
class FastPath:
    """A parsed simple expression.

    Attributes:
        pipelines: the ``//`` alternatives, each a tuple of steps ``(op, arg)``.
        default: ``(True, value)`` when the last alternative is a literal.
    """

    pipelines: tuple[tuple[tuple[int, Any], ...], ...]
    default: tuple[bool, Any]

    def evaluate(self, value: Any) -> list[Any] | None:
        """Outputs of the expression on ``value``, or ``None`` to defer to jq."""
        last = len(self.pipelines) - 1
        for position, steps in enumerate(self.pipelines):
            outputs = _run(steps, value)
            if outputs is None:
                return None
            if position == last and not self.default[0]:
                return outputs
            truthy = [v for v in outputs if v is not None and v is not False]
            if truthy:
                return truthy
        return [self.default[1]] if self.default[0] else []


def _run(steps: tuple[tuple[int, Any], ...], value: Any) -> list[Any] | None:
    current = [value]
    for op, arg in steps:
        nxt: list[Any] = []
        for item in current:
            if op == _FIELD:
                if isinstance(item, dict):
                    nxt.append(item.get(arg))
                elif item is None:
                    nxt.append(None)
                else:
                    return None
            elif op == _INDEX_OP:
                if isinstance(item, list):
                    index = arg + len(item) if arg < 0 else arg
                    nxt.append(item[index] if 0 <= index < len(item) else None)
                elif item is None:
                    nxt.append(None)
                else:
                    return None
            elif isinstance(item, list):
                nxt.extend(item)
            elif isinstance(item, dict):
                nxt.extend(item[k] for k in sorted(item))
            else:
                return None
        current = nxt
    return current


def _parse_path(text: str) -> tuple[tuple[int, Any], ...] | None:
    text = text.strip()
    if text == ".":
        return ()
    if not text.startswith("."):
        return None
    steps: list[tuple[int, Any]] = []
    pos = 0
    while pos < len(text):
        for pattern, kind in ((_IDENT, _FIELD), (_QUOTED_FIELD, _FIELD), (_INDEX, _INDEX_OP), (_ITER, _ITER_OP)):
            match = pattern.match(text, pos)
            if match:
                break
        else:
            return None
        if kind == _FIELD:
            quoted = match.group(1) if pattern is _IDENT else (match.group(1) or match.group(2))
            arg: Any = quoted if pattern is _IDENT else json.loads(quoted)
        elif kind == _INDEX_OP:
            arg = int(match.group(1))
        else:
            arg = None
        if pos == 0 and not text.startswith(".", 0):
            return None
        steps.append((kind, arg))
        pos = match.end()
    return tuple(steps)


def _parse_pipeline(text: str) -> tuple[tuple[int, Any], ...] | None:
    steps: list[tuple[int, Any]] = []
    for part in text.split("|"):
        parsed = _parse_path(part)
        if parsed is None:
            return None
        steps.extend(parsed)
    return tuple(steps)


def parse_fast_path(expression: str) -> FastPath | None:
    """Parse ``expression`` into a :class:`FastPath`, or ``None`` if it is not simple.

    Only expressions without string-internal ``|`` or ``//`` ambiguity are accepted: any
    quote character after the first alternative's path disables the fast path unless it
    is a complete literal.
    """
    if any(ch in expression for ch in "\\$#(){},;?+*<>=!@"):
        return None
    if "|" in expression and "//" in expression:
        return None  # `a | b // c` binds as `a | (b // c)`: leave precedence to jq
    if any("|" in s or "//" in s for s in re.findall(r'"[^"]*"', expression)):
        return None
    parts = expression.split("//")
    pipelines: list[tuple[tuple[int, Any], ...]] = []
    default: tuple[bool, Any] = (False, None)
    for index, part in enumerate(parts):
        if index == len(parts) - 1 and index > 0:
            literal = _LITERAL.match(part)
            if literal:
                try:
                    default = (True, json.loads(literal.group(1)))
                except ValueError:  # `01`: jq reads it, JSON does not; leave it to jq
                    return None
                break
        parsed = _parse_pipeline(part)
        if parsed is None:
            return None
        pipelines.append(parsed)
    if not pipelines:
        return None
    return FastPath(tuple(pipelines), default)
