"""Guards every registration path runs a caller's document under.

GraphQL, REST and Run:ai workload types alike, so that a hostile or malformed document is
a clear 4xx, never a stall or a 500.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

import yaml

from workload_map.errors import InvalidDefinition, InvalidRequest, Problem

log = logging.getLogger(__name__)

MAX_EXPANDED_VALUES = 250_000
"""Most values a definition may hold once YAML aliases are expanded (a 1 MiB document without
aliases holds far fewer)."""

ENGINE_FAILURES = (TypeError, ValueError, KeyError, AttributeError, IndexError, RecursionError)
"""Exceptions the definition engine should never raise on a caller's document."""


def check_expansion(doc: Any, *, limit: int = MAX_EXPANDED_VALUES) -> None:
    """Refuse YAML text whose aliases expand beyond ``limit`` values ("billion laughs").

    PyYAML shares aliased nodes, but every later JSON encoding (API responses, the Karta
    object) expands them, which would stall the event loop and exhaust memory.

    Text without ``*`` (no alias) is not parsed here; decoded documents are not checked.

    Raises:
        InvalidRequest: the expansion exceeds ``limit`` values.
    """
    if not isinstance(doc, str) or "*" not in doc:
        return
    try:
        documents = list(yaml.safe_load_all(doc))
    except (yaml.YAMLError, RecursionError):
        return  # the registration reports the syntax error itself
    seen, stack = 0, documents
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
