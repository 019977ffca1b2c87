"""Hash constructors without the start-up cost of OpenSSL: ``sha1``, ``sha256``, ``blake2b``.

The first ``import hashlib`` loads OpenSSL's ``libcrypto`` through ``_hashlib``: 2.5-4 ms of
a ``wmap describe -f`` of one small file (about 80 ms, target 0.08 s; py-spy over 15 runs,
6 % of the samples), where three modules on that path hash (the catalog's parse cache key,
a definition's key, a synthetic uid). CPython's own implementations of the same
standardized algorithms (FIPS 180-4 for SHA-1 and SHA-256, RFC 7693 for BLAKE2b) are built
in as ``_sha1``, ``_sha256`` (``_sha2`` from Python 3.12) and ``_blake2``, load in about
0.2 ms and give the same digests; hashlib itself falls back to them when OpenSSL lacks an
algorithm. Where an interpreter lacks one, hashlib's constructor is used.
https://docs.python.org/3/library/hashlib.html#hash-algorithms

Each constructor takes ``(data: bytes = b"", *, usedforsecurity: bool = True)`` and
``blake2b`` also ``digest_size``; the objects have ``update``, ``digest`` and ``hexdigest``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class Hash(Protocol):
    """A hash object: ``update(bytes)``, ``digest() -> bytes``, ``hexdigest() -> str``."""

    def update(self, data: bytes, /) -> None: ...  # noqa: D102
    def digest(self) -> bytes: ...  # noqa: D102
    def hexdigest(self) -> str: ...  # noqa: D102


sha1: Callable[..., Hash]
sha256: Callable[..., Hash]
blake2b: Callable[..., Hash]

try:
    from _sha1 import sha1  # type: ignore[import-not-found,no-redef]
except ImportError:  # pragma: no cover - an interpreter without the builtin module
    from hashlib import sha1
try:
    from _sha2 import sha256  # type: ignore[import-not-found,no-redef]  # Python 3.12+
except ImportError:
    try:
        from _sha256 import sha256  # type: ignore[import-not-found,no-redef]  # Python 3.11
    except ImportError:  # pragma: no cover
        from hashlib import sha256
try:
    from _blake2 import blake2b
except ImportError:  # pragma: no cover
    from hashlib import blake2b

__all__ = ["Hash", "blake2b", "sha1", "sha256"]
