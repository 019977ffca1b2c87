"""Fakes for caller checks without a cluster: a rule-table reviewer and a reader with plurals.

``FakeReviewer`` answers TokenReviews from a token -> user table and SubjectAccessReviews
from (user, verb, group, resource, namespace) rules, where namespace ``"*"`` grants every
namespace and the cluster scope (as a ClusterRoleBinding does) and a namespace name grants
only that namespace (a RoleBinding). It counts and records every review.
"""

from __future__ import annotations

import asyncio
import msgspec.structs
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette

from workload_map.app import create_app
from workload_map.auth.access import KubernetesAccess
from workload_map.config import AuthSettings, Settings
from workload_map.gvk import GVK
from workload_map.kube.reader import InformerStatus
from workload_map.kube.reviews import AccessAttributes, ReviewedUser
from workload_map.kube.snapshot import SnapshotReader
from tests.api.objects import jobset

Rule = tuple[str, str, str, str, str]


class FakeReviewer:
    """TokenReview / SubjectAccessReview from tables (see module docstring).

    Args:
        users: token -> user.
        rules: allowed (username, verb, group, resource, namespace-or-"*").
        delay: seconds each review takes.
    """

    def __init__(self, users: dict[str, ReviewedUser], rules: Iterable[Rule] = (), *, delay: float = 0.0) -> None:
        self.users = users
        self.rules = set(rules)
        self.delay = delay
        self.tokens_seen: list[str] = []
        self.access_seen: list[tuple[str, AccessAttributes]] = []
        self.in_flight = 0
        self.max_in_flight = 0

    async def _pause(self) -> None:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
        finally:
            self.in_flight -= 1

    async def review_token(self, token: str) -> ReviewedUser | None:
        self.tokens_seen.append(token)
        await self._pause()
        return self.users.get(token)

    async def review_access(self, user: ReviewedUser, attributes: AccessAttributes) -> bool:
        self.access_seen.append((user.username, attributes))
        await self._pause()
        a = attributes
        wanted = [(user.username, a.verb, a.group, a.resource or a.path, "*")]
        if a.namespace:
            wanted.append((user.username, a.verb, a.group, a.resource, a.namespace))
        return any(w in self.rules for w in wanted)


class PluralReader(SnapshotReader):
    """A snapshot whose informer states carry a resource plural (lower-case kind + s)."""

    def state(self, gvk: GVK) -> InformerStatus:
        return msgspec.structs.replace(super().state(gvk), resource=gvk.kind.lower() + "s")


ALICE = ReviewedUser("alice", "uid-alice", ("team-a", "system:authenticated"))
BOB = ReviewedUser("bob", "uid-bob", ("team-b", "system:authenticated"))
ROOT = ReviewedUser("root", "uid-root", ("system:masters", "system:authenticated"))
USERS = {"alice-token": ALICE, "bob-token": BOB, "root-token": ROOT}
JOBSETS = ("jobset.x-k8s.io", "jobsets")
RULES: set[Rule] = {
    ("alice", "list", *JOBSETS, "a"), ("alice", "get", "", "pods", "a"),
    ("bob", "list", *JOBSETS, "a"),
    ("bob", "list", *JOBSETS, "b"), ("bob", "get", "", "pods", "b"),
    *((("root", verb, *JOBSETS, "*")) for verb in ("list", "get")),
    ("root", "get", "", "pods", "*"), ("root", "create", "run.ai", "kartas", "*"),
    ("root", "delete", "run.ai", "kartas", "*"), ("root", "get", "", "/metrics", "*"),
}


def objects() -> list[dict[str, Any]]:
    """JobSets train-a (namespace a), train-b (b) and train-c (c), 2 pods each."""
    return [o for ns in ("a", "b", "c") for o in jobset(f"train-{ns}", ns, {"w": 2}, gpus=1)]


def bearer(token: str) -> dict[str, str]:
    """The Authorization header for ``token``."""
    return {"Authorization": f"Bearer {token}"}


@asynccontextmanager
async def auth_app(tmp_path: Path, reviewer: FakeReviewer | None = None, *,
                   settings: Settings | None = None) -> AsyncIterator[tuple[Starlette, httpx.AsyncClient]]:
    """The app over :func:`objects` with ``--auth kubernetes`` and a fake reviewer; yields it
    and an in-process client (lifespan running)."""
    settings = settings or Settings(state_dir=tmp_path / "state", auth=AuthSettings(mode="kubernetes"))
    access = KubernetesAccess(reviewer or FakeReviewer(USERS, RULES))
    app = create_app(settings, reader=PluralReader(objects()), access=access)
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        yield app, client
