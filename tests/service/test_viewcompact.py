"""Views compacted on arrival from the resolver pool stay equal and share immutable values."""

from __future__ import annotations

import pickle
from decimal import Decimal

from workload_map.service.viewcompact import compact_view
from tests.catalog.support import resolve_fixture


def _arrived(slug: str, state: str) -> object:
    """A view as the materializer receives it: pickled by a worker, unpickled here."""
    return pickle.loads(pickle.dumps(resolve_fixture(slug, state)))


def _pods(view: object) -> list:  # noqa: ANN001
    return [p for c in view.all_components() for i in c.instances for p in i.pods]  # type: ignore[attr-defined]


def test_compacted_view_equals_the_view_as_resolved() -> None:
    view = resolve_fixture("jobset-x-k8s-io-jobset-v1alpha2", "running")
    arrived = _arrived("jobset-x-k8s-io-jobset-v1alpha2", "running")
    assert compact_view(arrived) is arrived
    assert arrived.to_dict() == view.to_dict()
    assert _pods(arrived) and _pods(arrived)[0].requests  # the fixture has pods with GPU requests


def test_two_views_share_strings_decimals_and_the_policy() -> None:
    a = compact_view(_arrived("jobset-x-k8s-io-jobset-v1alpha2", "running"))
    b = compact_view(_arrived("jobset-x-k8s-io-jobset-v1alpha2", "running"))
    assert a is not b and a.to_dict() == b.to_dict()
    assert a.namespace is b.namespace and _pods(a)[0].phase is _pods(b)[0].phase
    assert a.policy is b.policy
    gpu_a = [v for p in _pods(a) for v in p.requests.values() if isinstance(v, Decimal)]
    gpu_b = [v for p in _pods(b) for v in p.requests.values() if isinstance(v, Decimal)]
    assert gpu_a and all(x is y for x, y in zip(gpu_a, gpu_b, strict=True))
    # containers stay per view: nothing mutable is shared
    assert _pods(a)[0].requests is not _pods(b)[0].requests
