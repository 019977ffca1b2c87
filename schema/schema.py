"""The strawberry schema with its limits and error masking.

Limits (strawberry extensions): query depth 15, 50 aliases, 5,000 tokens, bounded parser
and validation caches. ``MaskErrors`` hides unexpected exceptions behind "Unexpected
error." (they are logged once, by strawberry's error logger); our own ``ServerError``s
(bad cursor, page size, caches not ready) and GraphQL validation errors stay visible.
"""

from __future__ import annotations

from graphql import GraphQLError
from strawberry import Schema
from strawberry.extensions import AddValidationRules, MaskErrors, MaxTokensLimiter, ParserCache, ValidationCache
from strawberry.extensions.max_aliases import create_validator as max_aliases_rule
from strawberry.extensions.query_depth_limiter import create_validator as max_depth_rule

from schema.cluster import StaleExtension
from schema.mutation import Mutation
from schema.query import Query
from schema.subscription import Subscription
from server.errors import ServerError

MAX_DEPTH = 15
MAX_ALIASES = 50
MAX_TOKENS = 5000
CACHE_SIZE = 256


def is_unexpected(error: GraphQLError) -> bool:
    """True for errors to mask: raised by code, and not one of our ``ServerError``s."""
    original = error.original_error
    return original is not None and not isinstance(original, (ServerError, GraphQLError))


#: The depth and alias rules are built ONCE: QueryDepthLimiter/MaxAliasesLimiter would
#: create new rule classes per operation, which changes the validation cache key every time
#: (no cache hit ever; validation was half of a one-workload query).
LIMIT_RULES = [max_depth_rule(MAX_DEPTH, None, None), max_aliases_rule(MAX_ALIASES)]


def build_schema() -> Schema:
    """A new schema instance (extensions hold per-schema caches)."""
    return Schema(
        query=Query, mutation=Mutation, subscription=Subscription,
        # factories: strawberry builds fresh extension instances per operation; the
        # parser/validation LRU caches live at module level, keyed by maxsize
        extensions=[
            lambda: AddValidationRules(LIMIT_RULES),
            lambda: MaxTokensLimiter(max_token_count=MAX_TOKENS),
            lambda: ParserCache(maxsize=CACHE_SIZE),
            lambda: ValidationCache(maxsize=CACHE_SIZE),
            lambda: MaskErrors(should_mask_error=is_unexpected),
            StaleExtension,
        ],
    )


schema = build_schema()
"""The module-level schema (``strawberry export-schema schema.schema:schema``)."""


def sdl() -> str:
    """The schema in SDL, as committed in ``schema/schema.graphql``."""
    return schema.as_str() + "\n"
