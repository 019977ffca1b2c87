"""Domain errors of workload-map-server (no HTTP knowledge).

ServerError
+-- InvalidRequest            bad input from a caller (400)
+-- DefinitionError           a definition cannot be used
|   +-- InvalidDefinition     validation problems, each with a field path (422)
|   +-- JqError               one jq expression failed (carries expression, field, component)
|       +-- JqCompileError
|       +-- JqEvaluationError
+-- DefinitionNotFound        no definition for a GVK / id (404)
+-- WorkloadNotFound          no such workload, or not visible to the caller (404)
+-- Conflict                  a write lost a race or clashes (409)
+-- CacheNotReady             informer caches not synced yet (503)
+-- ServerStopping            the server is stopping: a held wait or stream ends (503)
+-- Forbidden                 the caller may not do this (403)
+-- Unauthorized              no or invalid credentials (401)
"""

from __future__ import annotations

from msgspec import Struct


class ServerError(Exception):
    """Base of every error this project raises on purpose.

    Attributes:
        code: stable machine-readable code (``invalid_definition``, ...).
    """

    code = "internal"


class InvalidRequest(ServerError):
    """The caller's request body or parameters are malformed."""

    code = "bad_request"


class Problem(Struct, frozen=True):
    """One validation finding: ``path`` is the field path, ``message`` the reason.

    Example: ``Problem("spec.structureDefinition.childComponents[1].ownerRef",
    'unknown component "wrker"')``.
    """

    path: str
    message: str
    expression: str = ""
    """The jq expression the finding is about ("" for none): in :meth:`to_dict` only, cut at
    :data:`EXPRESSION_SHOWN` characters, so an error message names the field once and a
    hostile 10,000-character expression is not repeated in it."""

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message

    def to_dict(self) -> dict[str, str]:
        """JSON shape ``{"path": ..., "message": ..., "expression"?: ...}`` (``expression`` when set)."""
        shown = {"expression": shown_expression(self.expression)} if self.expression else {}
        return {"path": self.path, "message": self.message, **shown}


EXPRESSION_SHOWN = 200
"""Characters of a jq expression shown in an error's details."""


def shown_expression(expression: str) -> str:
    """``expression``, or its first :data:`EXPRESSION_SHOWN` characters and ``... (N characters)``."""
    if len(expression) <= EXPRESSION_SHOWN:
        return expression
    return f"{expression[:EXPRESSION_SHOWN]}... ({len(expression)} characters)"


def expression_problem(path: str, expression: str, reason: str) -> Problem:
    """The finding that the jq expression at ``path`` is refused for ``reason``.

    The message is ``jq expression <reason>``; jq's own echo of a long source line inside
    ``reason`` is cut as in :func:`shown_expression` (the expression goes to ``details``).
    """
    for line in {line.strip() for line in expression.splitlines()}:
        if len(line) > EXPRESSION_SHOWN:
            reason = reason.replace(line, shown_expression(line))
    return Problem(path, f"jq expression {reason}", expression)


class DefinitionError(ServerError):
    """A definition cannot be loaded, validated or evaluated."""

    code = "definition_error"


class InvalidDefinition(DefinitionError):
    """A definition failed validation; ``problems`` lists every finding at once."""

    code = "invalid_definition"

    def __init__(self, problems: list[Problem], name: str = "") -> None:
        self.problems = list(problems)
        self.name = name
        head = f"invalid definition {name!r}" if name else "invalid definition"
        super().__init__(head + ": " + "; ".join(str(p) for p in self.problems))


class JqError(DefinitionError):
    """A jq expression failed.

    Attributes:
        expression: the jq source text.
        field: the definition field path the expression came from ("" if unknown).
        component: the component name ("" if unknown).
        reason: the underlying message from jq or from our limits.
    """

    code = "jq_error"
    kind = "execution"

    def __init__(self, expression: str, reason: str, *, field: str = "", component: str = "") -> None:
        self.expression = expression
        self.reason = reason
        self.field = field
        self.component = component
        where = f" at '{field}'" if field else ""
        super().__init__(f"jq {self.kind} error for expression '{expression}'{where}: {reason}")

    def with_context(self, *, field: str = "", component: str = "") -> "JqError":
        """A copy carrying the given field path and component name."""
        return type(self)(self.expression, self.reason, field=field or self.field,
                          component=component or self.component)


class JqCompileError(JqError):
    """The expression does not parse or compile."""

    kind = "compile"


class JqEvaluationError(JqError):
    """The expression raised at run time, exceeded the result cap or the input size cap."""

    kind = "execution"


class DefinitionNotFound(ServerError):
    """No definition is registered for the requested GVK or id."""

    code = "definition_not_found"


class WorkloadNotFound(ServerError):
    """No such workload (or the caller may not see it)."""

    code = "workload_not_found"


class Conflict(ServerError):
    """The write conflicts with the stored state."""

    code = "conflict"


class CacheNotReady(ServerError):
    """Informer caches have not completed their first list yet."""

    code = "not_ready"


class ServerStopping(ServerError):
    """The server is stopping: a request waiting on the change feed ends (503, Retry-After)."""

    code = "stopping"


class Forbidden(ServerError):
    """The caller is not allowed to do this."""

    code = "forbidden"


class Unauthorized(ServerError):
    """The request carries no valid credentials."""

    code = "unauthorized"


class TooManyDefinitions(ServerError):
    """Registering would exceed the number of definitions a server stores (429)."""

    code = "too_many_definitions"


class DefinitionsTooLarge(ServerError):
    """Registering would exceed the total size of the definitions a server stores (413)."""

    code = "definitions_too_large"
