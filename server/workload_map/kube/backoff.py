"""Exponential backoff with jitter for reconnect loops.

Semantics of kubernetes/client-go ``tools/cache/reflector.go`` (``NewExponentialBackoffManager``
with 800 ms initial, factor 2, 30 s cap, reset after 2 min): the n-th consecutive delay is
``step = min(cap, base * 2**n)`` stretched by up to ``jitter`` (``step * (1 + jitter * r)``,
``r`` uniform in [0, 1)), so with the defaults every delay lies in [0.8 s, 36 s). When the
previous delay was handed out more than ``reset_after`` seconds ago the sequence restarts
at ``base`` (the loop has been healthy meanwhile).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable


class Backoff:
    """Delays for consecutive failures.

    Args:
        base: first delay in seconds.
        cap: largest step before jitter, in seconds.
        jitter: extra fraction of the step added at random (0 disables).
        reset_after: seconds without a failure after which the sequence restarts.
        rng: random source (tests pass a seeded one).
        clock: monotonic clock in seconds.
    """

    def __init__(
        self,
        *,
        base: float = 0.8,
        cap: float = 30.0,
        jitter: float = 0.2,
        reset_after: float = 120.0,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.base, self.cap, self.jitter, self.reset_after = base, cap, jitter, reset_after
        self._rng = rng or random.Random()
        self._clock = clock
        self._attempt = 0
        self._last: float | None = None

    @property
    def max_delay(self) -> float:
        """Upper bound of any delay: ``cap * (1 + jitter)``."""
        return self.cap * (1 + self.jitter)

    def next_delay(self) -> float:
        """The delay to wait before the next attempt (seconds)."""
        now = self._clock()
        if self._last is not None and now - self._last > self.reset_after:
            self._attempt = 0
        self._last = now
        step = min(self.cap, self.base * 2 ** min(self._attempt, 32))
        self._attempt += 1
        return float(step * (1 + self.jitter * self._rng.random()))

    def reset(self) -> None:
        """Start again from ``base`` (after an explicit success)."""
        self._attempt = 0
        self._last = None
