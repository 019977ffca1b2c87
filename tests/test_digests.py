"""workload_map.digests gives hashlib's digests (the builtin implementations of the same algorithms)."""

from __future__ import annotations

import hashlib

import pytest

from workload_map import digests

INPUTS = [b"", b"abc", b"catalog-parse-v1", bytes(range(256)) * 4096]  # 1 MiB: every byte value, many blocks


@pytest.mark.parametrize("data", INPUTS, ids=["empty", "abc", "short", "1MiB"])
def test_every_constructor_gives_hashlibs_digest(data: bytes) -> None:
    assert digests.sha1(data, usedforsecurity=False).hexdigest() == hashlib.sha1(data).hexdigest()
    assert digests.sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
    assert digests.blake2b(data, digest_size=16).hexdigest() == hashlib.blake2b(data, digest_size=16).hexdigest()


def test_updates_in_pieces_equal_one_update() -> None:
    whole = digests.sha256(b"".join(INPUTS)).hexdigest()
    pieces = digests.sha256()
    for data in INPUTS:
        pieces.update(data)
    assert pieces.hexdigest() == whole
    # a known answer (FIPS 180-4 example "abc"), independent of hashlib
    assert digests.sha256(b"abc").hexdigest() == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_the_builtin_implementations_are_used_on_this_interpreter() -> None:
    # CPython 3.11 builds them in; hashlib's OpenSSL-backed constructors are of _hashlib
    assert {f.__module__ for f in (digests.sha1, digests.sha256, digests.blake2b)} <= {"_sha1", "_sha256", "_sha2",
                                                                                          "_blake2"}
