"""Kubernetes label selectors over plain label maps (``wmap get -l``, REST ``labelSelector``).

https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors:
equality-based ``a=b``, ``a==b``, ``a!=b``; set-based ``a in (x,y)``, ``a notin (x)``,
``a``, ``!a``; requirements joined by ``,`` are ANDed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from workload_map.errors import InvalidRequest

Requirement = Callable[[Mapping[str, str]], bool]

_SET = re.compile(r"^\s*(\S+)\s+(in|notin)\s+\(([^)]*)\)\s*$")
_KEY = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?)$")


def parse_selector(text: str, *, name: str = "-l/--selector") -> list[Requirement]:
    """The requirements of label selector ``text`` (all must hold).

    Raises:
        InvalidRequest: a requirement that is not one of the forms in the module docstring
            (the message names ``name``, the flag or parameter, and the requirement).
    """
    return [_requirement(part, name) for part in _split(text) if part.strip()]


def _split(text: str) -> list[str]:
    """Split on commas outside parentheses (``a in (x,y),b`` is two requirements)."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return [*parts, current]


def _requirement(part: str, name: str) -> Requirement:
    found = _SET.match(part)
    if found:
        key, op, values = _key(found[1], part, name), found[2], {v.strip() for v in found[3].split(",")}
        if op == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    for op in ("!=", "==", "="):
        if op in part:
            key_text, _, value = part.partition(op)
            key, value = _key(key_text, part, name), value.strip()
            if op == "!=":
                return lambda labels: labels.get(key) != value
            return lambda labels: labels.get(key) == value
    text = part.strip()
    if text.startswith("!"):
        key = _key(text[1:], part, name)
        return lambda labels: key not in labels
    key = _key(text, part, name)
    return lambda labels: key in labels


def _key(text: str, part: str, name: str) -> str:
    key = text.strip()
    if not _KEY.match(key):
        raise InvalidRequest(f"{name}: invalid requirement {part.strip()!r}: {key!r} is not a label key")
    return key


def matches(requirements: list[Requirement], labels: Mapping[str, str] | None) -> bool:
    """True when ``labels`` satisfy every requirement (no requirement: everything matches)."""
    return all(req(labels or {}) for req in requirements)
