"""Per-client bound on held ``?wait=`` phase requests (issue 29 item 2).

A long poll holds a connection for up to ``--max-wait`` seconds doing nothing; one client
holding a thousand of them fills the connection cap. Each client address (the peer of the
connection, ``scope["client"]``) may hold at most ``max_waits_per_client`` at once; one
more is answered 429 ``too_many_waits`` with ``Retry-After`` (RFC 6585 section 4) at
once, before it waits.

Behind a proxy every caller shares the proxy's address: raise the bound there.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator

from workload_map.errors import ServerError


class TooManyWaits(ServerError):
    """The client already holds its share of ``?wait=`` requests (429, ``Retry-After``)."""

    code = "too_many_waits"


class ClientWaits:
    """Counts held waits per client address.

    Args:
        limit: waits one address may hold at once (0: no bound).
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held: Counter[str] = Counter()

    @contextlib.contextmanager
    def hold(self, client: str) -> Iterator[None]:
        """Count one wait of ``client`` for the duration of the block.

        Raises:
            TooManyWaits: ``client`` already holds ``limit`` waits.
        """
        if self.limit and self.held[client] >= self.limit:
            raise TooManyWaits(f"this client already holds {self.limit} ?wait= requests, the limit per client; "
                               "wait for one to end or poll without wait")
        self.held[client] += 1
        try:
            yield
        finally:
            self.held[client] -= 1
            if not self.held[client]:
                del self.held[client]
