"""Load definitions from YAML/JSON text or decoded documents, fully validated.

``load_definition`` is the one entry point every caller uses (catalog, REST, GraphQL,
CLI, Karta custom resources): parse, then validate, then raise
:class:`~server.errors.InvalidDefinition` with *every* problem, or return the model.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from server.definitions.model import Definition
from server.definitions.parse import parse_definition
from server.definitions.validate import validate_definition
from server.errors import InvalidDefinition, InvalidRequest, Problem

#: Largest definition text accepted, bytes.
MAX_DEFINITION_BYTES = 1024 * 1024


def load_documents(text: str | bytes, *, source: str = "<input>") -> list[Any]:
    """Decode JSON or (multi-document) YAML text into documents, skipping empty ones.

    Raises:
        InvalidRequest: the text is not valid YAML/JSON (message names ``source``, line).
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            value = json.loads(text)
            return value if isinstance(value, list) else [value]
        except ValueError:
            pass  # YAML is a superset of JSON for our purposes: let YAML report the error
    try:
        return [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1} column {mark.column + 1}" if mark else ""
        reason = getattr(exc, "problem", None) or str(exc)
        raise InvalidRequest(f"{source}:{where}: not valid YAML or JSON: {reason}") from None


def check_definition(doc: Any) -> tuple[Definition | None, list[Problem]]:
    """Parse and validate ``doc``; return the model (or None) and all problems."""
    problems: list[Problem] = []
    definition = parse_definition(doc, problems)
    if definition is not None:
        problems += validate_definition(definition)
    return (definition if not problems else None), problems


def load_definition(doc: Any) -> Definition:
    """A validated :class:`Definition` from a decoded document or YAML/JSON text.

    Raises:
        InvalidRequest: text that does not decode, holds no document or more than one.
        InvalidDefinition: every validation problem, each with its field path.
    """
    if isinstance(doc, (str, bytes)):
        if len(doc) > MAX_DEFINITION_BYTES:
            raise InvalidRequest(f"definition of {len(doc)} bytes exceeds the limit of {MAX_DEFINITION_BYTES}")
        docs = load_documents(doc)
        if len(docs) != 1:
            raise InvalidRequest(f"expected exactly one definition document, got {len(docs)}")
        doc = docs[0]
    definition, problems = check_definition(doc)
    if definition is None:
        name = doc.get("metadata", {}).get("name", "") if isinstance(doc, dict) and isinstance(
            doc.get("metadata"), dict) else ""
        raise InvalidDefinition(problems, name=str(name))
    return definition


def check_termination(definition: Definition, samples: list[Any] | None = None, *,
                      timeout: float = 5.0) -> list[Problem]:
    """Evaluate every jq expression of a new definition once, in a child process.

    Static checks cannot prove termination (``def f: f; f`` passes them), a runaway
    recursion can abort the jq library, and the binding cannot be interrupted, so
    registration runs this before storing a definition (:mod:`server.jq.trial`). Samples
    are live objects of the definition's kinds when the caller has them (``{}`` is always
    tried).

    Returns:
        One problem per refused expression: did not finish within ``timeout`` seconds,
        crashed the evaluator, or one evaluation was slower than the per-evaluation limit.
    """
    from server.definitions.validate import jq_fields
    from server.jq.trial import trial_reasons

    fields = list(jq_fields(definition))
    reasons = trial_reasons([expr for _, expr in fields], list(samples or []), timeout=timeout)
    return [Problem(path, f"jq expression '{expr}' {reasons[expr]}") for path, expr in fields if expr in reasons]
