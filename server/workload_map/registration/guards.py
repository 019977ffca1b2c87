"""Guards every registration path runs a caller's document under.

GraphQL, REST and Run:ai workload types alike, so that a hostile or malformed document is
a clear 4xx, never a stall or a 500.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from workload_map.definitions.load import definition_documents, one_document
from workload_map.errors import InvalidDefinition, InvalidRequest, Problem

log = logging.getLogger(__name__)

MAX_EXPANDED_VALUES = 250_000
"""Most values a definition may hold once YAML aliases are expanded (a 1 MiB document without
aliases holds far fewer)."""

ENGINE_FAILURES = (TypeError, ValueError, KeyError, AttributeError, IndexError, RecursionError)
"""Exceptions the definition engine should never raise on a caller's document."""


def decode_checked(doc: Any, *, limit: int = MAX_EXPANDED_VALUES) -> Any:
    """A caller's document decoded once: text is parsed here, a decoded document passes as is.

    YAML text whose aliases expand beyond ``limit`` values is refused ("billion laughs"):
    PyYAML shares aliased nodes, but every later JSON encoding (API responses, the Karta
    object) expands them, which would stall the event loop and exhaust memory. Only text
    with ``*`` (an alias) is counted.

    Raises:
        InvalidRequest: text over the size limit or not decodable, an expansion beyond
            ``limit`` values, or not exactly one document.
    """
    if not isinstance(doc, (str, bytes)):
        return doc
    documents = definition_documents(doc)
    if isinstance(doc, str) and "*" in doc:
        check_expansion(documents, limit=limit)
    return one_document(documents)


def check_expansion(documents: list[Any], *, limit: int = MAX_EXPANDED_VALUES) -> None:
    """Refuse decoded ``documents`` holding more than ``limit`` values once aliases are expanded.

    Raises:
        InvalidRequest: the expansion exceeds ``limit`` values.
    """
    seen, stack = 0, list(documents)
    while stack:
        value = stack.pop()
        seen += 1
        if seen > limit:
            raise InvalidRequest(f"the definition expands to more than {limit} values (YAML aliases); "
                                 "write it without anchors and aliases")
        if isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)


@contextlib.contextmanager
def unreadable_as_invalid() -> Iterator[None]:
    """Turn an engine crash on a caller's document into ``InvalidDefinition`` (422).

    The crash is logged with its traceback once: a bad document must never become a 500.
    (Example found by ``tests/auth/test_fuzz.py``: ``kind: {}`` made the parser hash a dict.)

    Raises:
        InvalidDefinition: the engine failed on the document.
    """
    try:
        yield
    except ENGINE_FAILURES as exc:
        log.exception("the definition engine failed on a submitted document; answered as invalid")
        raise InvalidDefinition([Problem("", f"the definition cannot be read ({type(exc).__name__}); "
                                             "check its structure against the Karta format")]) from None
