"""A typed reader over untrusted mappings that records problems with field paths.

Parsing a definition must report every problem at once, so readers never raise: a
wrong type or missing required field adds a :class:`~workload_map.errors.Problem` naming the
full field path and the reason, and returns ``None``.
"""

from __future__ import annotations

from typing import Any, Iterator

from workload_map.errors import Problem


class Fields:
    """Read fields of ``data`` (a mapping expected at ``path``) into ``problems``.

    Args:
        data: the mapping to read (anything else is reported as a type problem).
        path: its field path, e.g. ``spec.structureDefinition.rootComponent``.
        problems: shared list that collects findings.
        known: the field names allowed here; others are reported as unknown.
    """

    def __init__(self, data: Any, path: str, problems: list[Problem], known: tuple[str, ...] | None = None) -> None:
        self.path = path
        self.problems = problems
        if data is None:
            data = {}
        if not isinstance(data, dict):
            problems.append(Problem(path, f"must be an object, got {_type(data)}"))
            data = {}
        self.data: dict[str, Any] = data
        if known is not None:
            for key in data:
                if key not in known:
                    problems.append(Problem(self.at(str(key)), "unknown field"))

    def at(self, key: str | int) -> str:
        """Field path of ``key`` under this mapping."""
        if isinstance(key, int):
            return f"{self.path}[{key}]"
        return f"{self.path}.{key}" if self.path else key

    def has(self, key: str) -> bool:
        """True when ``key`` is present and not null."""
        return self.data.get(key) is not None

    def string(self, key: str, *, required: bool = False, empty_ok: bool = False) -> str | None:
        """A string field (numbers and booleans are not coerced)."""
        value = self.data.get(key)
        if value is None:
            if required:
                self.problems.append(Problem(self.at(key), "required field is missing"))
            return None
        if not isinstance(value, str):
            self.problems.append(Problem(self.at(key), f"must be a string, got {_type(value)}"))
            return None
        if not value and not empty_ok:
            if required:
                self.problems.append(Problem(self.at(key), "must not be empty"))
            return None
        return value

    def child(self, key: str, known: tuple[str, ...] | None = None, *, required: bool = False) -> "Fields | None":
        """The nested mapping at ``key`` (``None`` when absent)."""
        if not self.has(key):
            if required:
                self.problems.append(Problem(self.at(key), "required field is missing"))
            return None
        return Fields(self.data[key], self.at(key), self.problems, known)

    def items(self, key: str, *, required: bool = False) -> Iterator[tuple[str, Any]]:
        """``(path, item)`` for each element of the list at ``key``."""
        value = self.data.get(key)
        if value is None:
            if required:
                self.problems.append(Problem(self.at(key), "required field is missing"))
            return
        if not isinstance(value, list):
            self.problems.append(Problem(self.at(key), f"must be a list, got {_type(value)}"))
            return
        for index, item in enumerate(value):
            yield f"{self.at(key)}[{index}]", item

    def strings(self, key: str) -> tuple[str, ...]:
        """A list of strings at ``key`` (non-strings reported and skipped)."""
        out: list[str] = []
        for path, item in self.items(key):
            if isinstance(item, str):
                out.append(item)
            else:
                self.problems.append(Problem(path, f"must be a string, got {_type(item)}"))
        return tuple(out)

    def string_map(self, key: str) -> tuple[tuple[str, str], ...] | None:
        """A map of string to string at ``key``, in document order."""
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, dict):
            self.problems.append(Problem(self.at(key), f"must be an object, got {_type(value)}"))
            return None
        out: list[tuple[str, str]] = []
        for k, v in value.items():
            if not isinstance(v, str):
                self.problems.append(Problem(f"{self.at(key)}.{k}", f"must be a string, got {_type(v)}"))
            else:
                out.append((str(k), v))
        return tuple(out)


def _type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__
