"""GraphQL errors in one shape: every error's ``extensions.code`` comes from :data:`CODES`.

One hook sets it: :func:`shape`, called by the schema's ``process_errors``
(:class:`workload_map.graphql.schema.LoggingSchema`) for every error list strawberry
produces (parse, cost check, validation, execution, subscription events), before masking.
Resolvers raise plain :class:`workload_map.errors.ServerError` subclasses; their stable
domain code (the REST body's ``error``) is kept as ``extensions.error`` and mapped to the
GraphQL code by :data:`DOMAIN_CODES`. Query refusals raised by
:mod:`workload_map.graphql.cost` already carry their code and figures; limits enforced by
graphql-core and strawberry (token count, depth, aliases) are recognised by their message
(:data:`LIMIT_MESSAGES`). Unexpected exceptions become ``INTERNAL`` with a fixed message.

The codes follow the names common GraphQL servers use (Apollo Server's
``GRAPHQL_PARSE_FAILED``, ``GRAPHQL_VALIDATION_FAILED``, ``BAD_USER_INPUT``, ...), so generic
clients recognise them; docs/api.md lists the set.
"""

from __future__ import annotations

from graphql import GraphQLError, GraphQLSyntaxError

from workload_map.errors import ServerError

MASKED_MESSAGE = "Unexpected error."
"""The message of an ``INTERNAL`` error (the exception is logged, never sent)."""

REFUSALS: dict[str, str] = {
    "QUERY_TOO_EXPENSIVE": "the fragment-expanded field count (pages expanded) is over the cost limit",
    "QUERY_TOO_DEEP": "selections nested deeper than the depth limit",
    "TOO_MANY_ALIASES": "more aliases than the alias limit",
    "TOO_MANY_TOKENS": "the document has more tokens than the parser limit",
    "TOO_MANY_FRAGMENT_SPREADS": "more fragment spreads than the spread limit",
    "FRAGMENT_CYCLE": "fragment spreads form a cycle",
    "FIELD_REPEATED": "one field selected too many times in one selection set",
    "OPERATION_NAME_REQUIRED": "several operations and no operationName",
}
"""Query refusals: the document is refused before it runs (limits of docs/api.md)."""

CODES: dict[str, str] = {
    "GRAPHQL_PARSE_FAILED": "the document does not parse (syntax error)",
    "GRAPHQL_VALIDATION_FAILED": "the document does not match the schema (unknown field, wrong argument type, ...)",
    **REFUSALS,
    "BAD_USER_INPUT": "an argument or variable value is refused (bad cursor, page size, change text, ...)",
    "BAD_REQUEST": "the HTTP request is not a usable GraphQL request (no query, unreadable JSON, mutation over GET)",
    "UNAUTHENTICATED": "no or invalid credentials",
    "FORBIDDEN": "the caller may not do this",
    "NOT_FOUND": "the workload or definition the operation names does not exist",
    "CONFLICT": "a write lost a race (stale resourceVersion) or clashes with the stored state (including the "
                "server's caps on registered definitions)",
    "TIMEOUT": "the request did not finish within its time budget",
    "UNAVAILABLE": "the server cannot answer yet or now (caches syncing, overloaded, a review or store down): retry",
    "INTERNAL": "an unexpected error (logged by the server; the message is fixed)",
}
"""The documented set of ``extensions.code`` values (code -> meaning)."""

DOMAIN_CODES: dict[str, str] = {
    "bad_request": "BAD_USER_INPUT",
    "invalid_definition": "BAD_USER_INPUT",
    "definition_error": "BAD_USER_INPUT",
    "jq_error": "BAD_USER_INPUT",
    "not_writable": "BAD_USER_INPUT",
    "missing_definition_field": "BAD_USER_INPUT",
    "invalid_snapshot": "BAD_USER_INPUT",
    "payload_too_large": "BAD_REQUEST",
    "unauthorized": "UNAUTHENTICATED",
    "forbidden": "FORBIDDEN",
    "cross_origin_refused": "FORBIDDEN",
    "host_not_allowed": "FORBIDDEN",
    "workload_not_found": "NOT_FOUND",
    "definition_not_found": "NOT_FOUND",
    "conflict": "CONFLICT",
    "too_many_definitions": "CONFLICT",  # the stored definitions leave no room: delete one first
    "definitions_too_large": "CONFLICT",
    "timeout": "TIMEOUT",
    "body_timeout": "TIMEOUT",
    "deadline_exceeded": "TIMEOUT",
    "not_ready": "UNAVAILABLE",
    "stopping": "UNAVAILABLE",
    "overloaded": "UNAVAILABLE",
    "too_many_waits": "UNAVAILABLE",
    "store_unavailable": "UNAVAILABLE",
    "auth_unavailable": "UNAVAILABLE",
    "cluster_unreachable": "UNAVAILABLE",
    "cluster_config": "INTERNAL",
    "internal": "INTERNAL",
}
"""``ServerError.code`` (the REST ``error``) -> GraphQL code; an unlisted one is ``INTERNAL``."""

LIMIT_MESSAGES: tuple[tuple[str, str], ...] = (
    ("Document contains more than", "TOO_MANY_TOKENS"),  # graphql-core's parser (max_tokens)
    ("exceeds maximum operation depth of", "QUERY_TOO_DEEP"),  # strawberry's QueryDepthLimiter rule
    ("aliases found. Allowed:", "TOO_MANY_ALIASES"),  # strawberry's MaxAliasesLimiter rule
)
"""(message fragment, code) of the limits graphql-core and strawberry report as plain errors."""


def is_unexpected(error: GraphQLError) -> bool:
    """True for errors to mask: raised by code, and not one of our ``ServerError``s."""
    original = error.original_error
    return original is not None and not isinstance(original, (ServerError, GraphQLError))


def code_of(error: GraphQLError) -> tuple[str, str | None]:
    """``(GraphQL code, domain code or None)`` of one error (see the module docstring)."""
    original = error.original_error
    if isinstance(original, ServerError):
        return DOMAIN_CODES.get(original.code, "INTERNAL"), original.code
    if is_unexpected(error):
        return "INTERNAL", None
    given = (error.extensions or {}).get("code")
    if given in CODES:
        return str(given), None
    for fragment, code in LIMIT_MESSAGES:
        if fragment in error.message:
            return code, None
    if isinstance(error, GraphQLSyntaxError) or isinstance(original, GraphQLSyntaxError):
        return "GRAPHQL_PARSE_FAILED", None
    if error.message.startswith("Variable '$"):
        return "BAD_USER_INPUT", None  # graphql-core's variable coercion (a value, not the document)
    return ("GRAPHQL_VALIDATION_FAILED" if error.path is None else "INTERNAL"), None


def shape(error: GraphQLError) -> None:
    """Set ``error.extensions["code"]`` (and ``error`` for domain errors); mask an unexpected one.

    Changes ``error`` in place (strawberry serializes the same object). Idempotent: errors
    cached by the validation cache pass here once per operation.
    """
    code, domain = code_of(error)
    extensions = {k: v for k, v in (error.extensions or {}).items() if k not in ("code", "error")}
    extensions["code"] = code
    if domain is not None:
        extensions["error"] = domain
    if code == "INTERNAL" and is_unexpected(error):
        error.message = MASKED_MESSAGE
        error.original_error = None
    error.extensions = extensions
