"""Token parsing, cached TokenReview / SubjectAccessReview decisions, the write rule."""

from __future__ import annotations

import asyncio

import pytest

from workload_map.auth.access import OPEN_GUARD, Guard, KubernetesAccess
from workload_map.auth.identity import bearer_token, payload_token, token_key
from workload_map.auth.writes import writing_as
from workload_map.errors import Forbidden, Unauthorized
from workload_map.kube.reviews import AccessAttributes, acting_as
from workload_map.definitions.stored import StoreError
from tests.auth.support import BOB, RULES, USERS, FakeReviewer

LIST_A = AccessAttributes("list", "jobset.x-k8s.io", "jobsets", "a")


@pytest.mark.parametrize(("header", "token"), [
    ("Bearer abc.def-ghi_", "abc.def-ghi_"), ("bearer  xyz ", "xyz"), ("Basic abc", None), ("Bearer", None),
    ("Bearer a b", None), (None, None), ("", None), ("Bearer " + "x" * 20_000, None),
])
def test_bearer_token(header: str | None, token: str | None) -> None:
    assert bearer_token(header) == token


def test_payload_token_accepts_the_usual_spellings() -> None:
    assert payload_token({"Authorization": "Bearer t1"}) == "t1"
    assert payload_token({"authToken": "t2"}) == "t2"
    assert payload_token({"token": "Bearer t3"}) == "t3"
    assert payload_token({"other": "t4"}) is None and payload_token(None) is None and payload_token([]) is None


async def test_identities_are_cached_by_token_hash_and_rejections_briefly() -> None:
    reviewer = FakeReviewer(USERS)
    access = KubernetesAccess(reviewer, ttl=60, negative_ttl=0.2)
    caller = await access.authenticate("bob-token")
    assert caller.user == BOB and caller.token_key == token_key("bob-token") != "bob-token"
    assert await access.authenticate("bob-token") is caller and access.token_reviews == 1
    assert all("bob-token" not in str(key) for key in access._users)  # keyed by hash only
    for _ in range(3):
        with pytest.raises(Unauthorized):
            await access.authenticate("forged")
    assert access.token_reviews == 2  # the rejection is cached ...
    await asyncio.sleep(0.25)
    with pytest.raises(Unauthorized):
        await access.authenticate("forged")
    assert access.token_reviews == 3  # ... briefly
    with pytest.raises(Unauthorized):
        await access.authenticate(None)


async def test_decisions_are_cached_per_token_and_attributes_and_expire() -> None:
    reviewer = FakeReviewer(USERS, RULES)
    access = KubernetesAccess(reviewer, ttl=0.2)
    guard = Guard(access, await access.authenticate("bob-token"))
    assert await guard.allows("list", "jobset.x-k8s.io", "jobsets", "a")
    assert not await guard.allows("list", "jobset.x-k8s.io", "jobsets", "c")
    assert await guard.allows("list", "jobset.x-k8s.io", "jobsets", "a") and access.access_reviews == 2
    await asyncio.sleep(0.25)
    assert await guard.allows("list", "jobset.x-k8s.io", "jobsets", "a") and access.access_reviews == 3


async def test_concurrent_asks_share_one_review_and_reviews_are_bounded() -> None:
    reviewer = FakeReviewer(USERS, RULES, delay=0.05)
    access = KubernetesAccess(reviewer, concurrency=3)
    callers = await asyncio.gather(*(access.authenticate("bob-token") for _ in range(20)))
    assert len({id(c) for c in callers}) == 1 and access.token_reviews == 1
    guard = Guard(access, callers[0])
    same = await asyncio.gather(*(guard.allows("list", "jobset.x-k8s.io", "jobsets", "a") for _ in range(20)))
    assert all(same) and access.access_reviews == 1
    many = await guard.allows_each(("list", "jobset.x-k8s.io", "jobsets", f"ns-{i}") for i in range(30))
    assert not any(many) and access.access_reviews == 31 and reviewer.max_in_flight <= 3


async def test_a_cancelled_asker_does_not_break_the_shared_review() -> None:
    access = KubernetesAccess(FakeReviewer(USERS, RULES, delay=0.1))
    first = asyncio.create_task(access.authenticate("bob-token"))
    await asyncio.sleep(0.01)
    second = asyncio.create_task(access.authenticate("bob-token"))
    first.cancel()
    assert (await second).user == BOB and access.token_reviews == 1


async def test_writing_as_requires_the_verb_and_acts_as_the_caller() -> None:
    access = KubernetesAccess(FakeReviewer(USERS, RULES))
    bob = Guard(access, await access.authenticate("bob-token"))
    with pytest.raises(Forbidden, match="'bob' may not create kartas.run.ai"):
        async with writing_as(bob, "create"):
            raise AssertionError("the block must not run")
    root = Guard(access, await access.authenticate("root-token"))
    async with writing_as(root, "create"):
        from workload_map.kube import reviews
        acting = reviews._ACTING.get()
        assert acting is not None and acting.user == "root" and "system:masters" in acting.groups
    assert reviews._ACTING.get() is None


async def test_a_write_the_api_server_refuses_for_the_caller_is_forbidden() -> None:
    access = KubernetesAccess(FakeReviewer(USERS, RULES))
    root = Guard(access, await access.authenticate("root-token"))
    with pytest.raises(Forbidden, match="refused by the API server"):
        async with writing_as(root, "create"):
            from workload_map.kube import reviews
            acting = reviews._ACTING.get()
            assert acting is not None
            acting.refused = "caller"
            raise StoreError("cannot write Karta x: the server's credentials are not allowed to")
    with pytest.raises(StoreError):  # the server may not impersonate: stays a store error (503)
        async with writing_as(root, "create"):
            reviews._ACTING.get().refused = "impersonation"  # type: ignore[union-attr]
            raise StoreError("cannot write")


async def test_open_guard_allows_everything_without_reviews() -> None:
    assert OPEN_GUARD.is_open and await OPEN_GUARD.allows("delete", "run.ai", "kartas")
    async with writing_as(OPEN_GUARD, "create"):
        pass
    with acting_as("x", ("g",)) as acting:
        assert acting.user == "x" and acting.requests == 0
