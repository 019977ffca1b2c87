"""The caller: a bearer token, its hash and the identity a TokenReview gave it.

Tokens are never stored or logged: caches are keyed by :func:`token_key` (SHA-256, hex).
A token is read from ``Authorization: Bearer <token>`` (RFC 6750 section 2.1) or, for
GraphQL websockets, from the ``connection_init`` payload (``Authorization``,
``authorization``, ``authToken`` or ``token``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from msgspec import Struct

from workload_map.digests import sha256
from workload_map.kube.reviews import ReviewedUser

MAX_TOKEN_CHARS = 16 * 1024
"""Longer bearer tokens are refused without a review (bound on the review request body)."""

_BEARER = re.compile(r"\s*bearer\s+([!-~]+)\s*", re.IGNORECASE | re.ASCII)
_PAYLOAD_KEYS = ("Authorization", "authorization", "authToken", "token")


def bearer_token(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` value; None when absent or malformed."""
    if not header or len(header) > MAX_TOKEN_CHARS:
        return None
    match = _BEARER.fullmatch(header)
    return match.group(1) if match else None


def payload_token(payload: Mapping[str, Any] | None) -> str | None:
    """The token in a websocket ``connection_init`` payload (a bare token or ``Bearer <token>``)."""
    if not isinstance(payload, Mapping):
        return None
    for key in _PAYLOAD_KEYS:
        value = payload.get(key)
        if isinstance(value, str) and value.strip():
            return bearer_token(value) or bearer_token(f"Bearer {value}")
    return None


def token_key(token: str) -> str:
    """SHA-256 of the token (hex): the only form in which a token is kept."""
    return sha256(token.encode("utf-8")).hexdigest()


class Caller(Struct, frozen=True):
    """An authenticated caller.

    Attributes:
        user: the TokenReview identity (name, uid, groups, extra).
        token_key: :func:`token_key` of the caller's token ("" without one).
    """

    user: ReviewedUser
    token_key: str = ""

    @property
    def name(self) -> str:
        """User name (``alice``, ``system:serviceaccount:ns:sa``)."""
        return self.user.username

    @property
    def groups(self) -> tuple[str, ...]:
        """Group names."""
        return self.user.groups


LOCAL = Caller(ReviewedUser("local", groups=("system:authenticated",)))
"""The caller of a server running with ``--auth none`` (everything allowed)."""
