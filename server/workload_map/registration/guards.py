"""Guards every registration path runs a caller's document under.

GraphQL, REST and Run:ai workload types alike, so that a hostile or malformed document is
a clear 4xx, never a stall or a 500. (YAML aliases and merge keys are counted where the
text is parsed, ``workload_map.definitions.load.check_expansion``, off the event loop.)
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from workload_map.definitions.load import decode_definition
from workload_map.errors import InvalidDefinition, Problem
from workload_map.logs import logger

log = logger(__name__)

ENGINE_FAILURES = (TypeError, ValueError, KeyError, AttributeError, IndexError, RecursionError)
"""Exceptions the definition engine should never raise on a caller's document."""


def decode_checked(doc: Any) -> Any:
    """A caller's document decoded once: text is parsed here, a decoded document passes as is.

    Text goes through :func:`workload_map.definitions.load.decode_definition` (size limit,
    YAML aliases and merge keys counted as expanded by libyaml's event stream, exactly one
    document).

    Raises:
        InvalidRequest: text over the size limit or not decodable, an expansion beyond
            the limit, or not exactly one document.
    """
    return decode_definition(doc) if isinstance(doc, (str, bytes)) else doc


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
