"""The strawberry schema with its limits and error masking.

Limits (strawberry extensions): query depth 15, 50 aliases, 5,000 tokens, bounded parser
and validation caches, and :class:`QueryCost` (:mod:`workload_map.graphql.cost`: fragment-expanded cost,
fragment spreads, cycles, repeated fields, ``operationName``), which runs right after
parsing so a refused document never reaches graphql-core's validation rules. Errors: one
hook, :meth:`LoggingSchema.process_errors`, logs every error once and gives it its
``extensions.code`` (:mod:`workload_map.graphql.errors`, the documented set); unexpected
exceptions are masked there as ``INTERNAL`` "Unexpected error." (logged with their traceback
by strawberry's error logger); our own ``ServerError``s (bad cursor, page size, caches not
ready) and GraphQL validation errors stay visible.
"""

from __future__ import annotations

from collections.abc import Iterator

from graphql import GraphQLError
from graphql.validation import ASTValidationRule
from strawberry import Schema
from strawberry.types import ExecutionContext
from strawberry.utils.logging import StrawberryLogger
from strawberry.extensions import (
    AddValidationRules,
    MaxTokensLimiter,
    ParserCache,
    SchemaExtension,
    ValidationCache,
)
from strawberry.extensions.max_aliases import create_validator as max_aliases_rule
from strawberry.extensions.query_depth_limiter import create_validator as max_depth_rule

from workload_map.graphql.cost import CostLimits, QueryRefused, operation_cost
from workload_map.graphql.cluster import StaleExtension
from workload_map.graphql.errors import is_unexpected, shape
from workload_map.graphql.mutation import Mutation
from workload_map.graphql.query import Query
from workload_map.graphql.fastpath import FastExecution
from workload_map.graphql.subscription import Subscription
from workload_map.logs import logger

log = logger(__name__)

MAX_DEPTH = 15
MAX_ALIASES = 50
MAX_TOKENS = 5000
CACHE_SIZE = 256
COST_LIMITS_KEY = "wmap.cost_limits"
"""Request scope key of the app's :class:`workload_map.graphql.cost.CostLimits` (set by the GraphQL view)."""


#: The depth and alias rules are built ONCE: QueryDepthLimiter/MaxAliasesLimiter would
#: create new rule classes per operation, which changes the validation cache key every time
#: (no cache hit ever; validation was half of a one-workload query).
LIMIT_RULES: list[type[ASTValidationRule]] = [max_depth_rule(MAX_DEPTH, None, None), max_aliases_rule(MAX_ALIASES)]


class SafeParserCache(ParserCache):
    """Strawberry's ParserCache, leaving a document that does not parse to strawberry.

    Strawberry's own parse step reports the syntax error as the operation's error.

    The stock extension parses in its hook, outside strawberry's error handling: on the
    SSE/multipart path a syntax error escaped into the streaming response and the client
    saw the stream end with no message at all.
    """

    def on_parse(self) -> Iterator[None]:
        """Parse the document before strawberry does, leaving a syntax error for it to report."""
        ctx = self.execution_context
        try:
            ctx.graphql_document = self.cached_parse_document(ctx.query, **ctx.parse_options)
        except GraphQLError:
            pass  # parsed again (and reported) by strawberry
        yield


class QueryCost(SchemaExtension):
    """Price the operation after parsing, before validation (see :mod:`workload_map.graphql.cost`).

    Limits come from the request scope (``COST_LIMITS_KEY``), else the defaults.

    Raises:
        GraphQLError: refused, with ``extensions.code`` (``QUERY_TOO_EXPENSIVE``,
            ``FRAGMENT_CYCLE``, ...) and the figures; strawberry answers it as the
            operation's only error.
    """

    def on_parse(self) -> Iterator[None]:
        """After parsing, price the operation and refuse it when over the limits."""
        yield
        ctx = self.execution_context
        if ctx.graphql_document is None:
            return
        request = getattr(ctx.context, "request", None)
        limits = getattr(request, "scope", {}).get(COST_LIMITS_KEY) if request is not None else None
        try:
            operation_cost(ctx.schema._schema, ctx.graphql_document, operation_name=getattr(ctx, "_provided_operation_name", None),
                           variables=ctx.variables, limits=limits if isinstance(limits, CostLimits) else CostLimits())
        except QueryRefused as refused:
            raise GraphQLError(str(refused), extensions=refused.extensions) from None


class LoggingSchema(Schema):
    """Strawberry's schema whose error hook logs and shapes every error (the one hook).

    Strawberry calls :meth:`process_errors` once for every error list it produces (parse,
    cost check, validation, execution, each subscription event), before the answer is
    serialized. Client mistakes (syntax, validation, refusals, our ``ServerError``s) are
    logged at INFO without a traceback; unexpected exceptions go to strawberry's error
    logger (ERROR with the traceback) and are then masked.
    """

    def process_errors(self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None) -> None:
        """Log each error of one operation at the level its cause deserves, then set its code."""
        for error in errors:
            if is_unexpected(error):
                StrawberryLogger.error(error, execution_context)
                shape(error)
            else:
                shape(error)
                log.info("GraphQL operation refused (%s): %s", (error.extensions or {}).get("code"), error.message)


def build_schema() -> Schema:
    """A new schema instance (extensions hold per-schema caches)."""
    return LoggingSchema(
        query=Query, mutation=Mutation, subscription=Subscription, execution_context_class=FastExecution,
        # factories: strawberry builds fresh extension instances per operation; the
        # parser/validation LRU caches live at module level, keyed by maxsize
        extensions=[
            lambda: AddValidationRules(LIMIT_RULES),
            lambda: MaxTokensLimiter(max_token_count=MAX_TOKENS),
            lambda: SafeParserCache(maxsize=CACHE_SIZE),
            QueryCost,
            lambda: ValidationCache(maxsize=CACHE_SIZE),
            StaleExtension,
        ],
    )


schema = build_schema()
"""The module-level schema (``strawberry export-schema workload_map.graphql.schema:schema``)."""


def sdl() -> str:
    """The schema in SDL, as committed in ``schema/schema.graphql``."""
    return schema.as_str() + "\n"
