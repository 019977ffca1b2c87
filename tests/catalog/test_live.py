"""The catalog fixtures are valid objects for the real API server, and the live path sees them alike.

For every fixture state (``tests/fixtures/objects/<slug>/<state>.yaml``) the objects are created
in the test control plane (a real kube-apiserver with the operators' CRDs from ``../shared/crds``
when present, the project's minimal CRDs otherwise), each state in a namespace of its own, owners
first, with the uids the server gives rewritten into ownerReferences, and ``status`` written
through the ``/status`` subresource (see ``live_support``). Every write uses
``fieldValidation=Strict``, so a field the real schema does not know fails as loudly as a wrong
type or a missing required field.

Then one ``InformerCache`` per definition reads all its states (the server's live read path) and
``WorkloadService.workloads`` resolves them; each live view must equal the view the pure path
(``resolve_objects`` over the fixture file) gives: phases, desired/current/ready per role, the
three GPU figures, instance ids, unattributed pods, errors, and the whole JSON view with only
uids and namespace mapped back, resourceVersion, createdAt and origin left out, and pod lists
compared by name (their order is the order the pods came in: file order vs cache order). The
live listing of the namespace must be the root alone (no child object shows as a workload).

A state the server rejects fails with the server's message; a state some of whose kinds the
control plane does not serve (no CRD installed) is skipped, naming what was and was not created.
States known to be invalid for the real schema are strict xfails, listed in ``REJECTED``.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.catalog.live_support import LiveResult, replace_strings, run_slug
from tests.catalog.support import catalog, definition, fixture_states, load, resolve_objects, summary

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]

SLUGS = sorted(e.definition.name for e in catalog())

# Fixture states the real API server rejects: (slug, state) -> the server's messages, in the order
# the objects are created ("<Kind> <name>: create|status HTTP <code>: <message>"). A state listed
# here is a strict xfail until its fixture is corrected. Empty: every fixture state is valid.
REJECTED: dict[tuple[str, str], tuple[str, ...]] = {}

# Rejections that come from an operator CRD's own validation (CEL, enums, ...): expected only when
# that CRD is the operator's (shared) one, not the project's minimal preserve-unknown-fields CRD.
NEEDS_SHARED_CRD: dict[tuple[str, str], str] = {}


class Rejected(AssertionError):
    """The API server rejected a fixture object (the message is the server's)."""


ALL = [pytest.param(slug, state, id=f"{slug}/{state}") for slug in SLUGS for state in fixture_states(slug)]


def expected_rejection(control_plane: Any, slug: str, state: str) -> tuple[str, ...] | None:
    """The messages ``REJECTED`` expects for this state with the CRDs this control plane has."""
    crd = NEEDS_SHARED_CRD.get((slug, state))
    if crd is not None and control_plane.installed_crds.get(crd) != "shared":
        return None
    return REJECTED.get((slug, state))


_RESULTS: dict[str, dict[str, LiveResult]] = {}


async def live_results(control_plane: Any, slug: str) -> dict[str, LiveResult]:
    """Every state of ``slug`` created and resolved live, once per test run."""
    if slug not in _RESULTS:
        _RESULTS[slug] = await run_slug(control_plane, slug)
    return _RESULTS[slug]


def differences(got: Any, want: Any, path: str = "") -> list[str]:
    """Paths where ``got`` and ``want`` differ, with both values (``[]`` when equal)."""
    if isinstance(got, dict) and isinstance(want, dict):
        return [d for k in {**want, **got} for d in differences(got.get(k, "<absent>"), want.get(k, "<absent>"),
                                                                 f"{path}.{k}")]
    if isinstance(got, list) and isinstance(want, list) and len(got) == len(want):
        return [d for i, (g, w) in enumerate(zip(got, want)) for d in differences(g, w, f"{path}[{i}]")]
    return [] if got == want else [f"{path or '.'}: live {got!r} != pure {want!r}"]


def _sort_pods(value: Any) -> Any:
    """Pod lists sorted by name: their order is the order the objects came in (file vs cache)."""
    if isinstance(value, dict):
        return {k: sorted(map(_sort_pods, v), key=lambda p: p["name"] if isinstance(p, dict) else p)
                if k in ("pods", "unattributedPods") and isinstance(v, list) else _sort_pods(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_sort_pods(v) for v in value]
    return value


def _normalise(view_dict: dict[str, Any], mapping: dict[str, str]) -> dict[str, Any]:
    out = _sort_pods(replace_strings(view_dict, mapping))
    for key in ("resourceVersion", "createdAt", "origin"):
        out.pop(key, None)
    return out


@pytest.mark.parametrize(("slug", "state"), ALL)
async def test_live_view_equals_pure_view(request: pytest.FixtureRequest, k8s_control_plane: Any, slug: str,
                                          state: str) -> None:
    expected = expected_rejection(k8s_control_plane, slug, state)
    if expected is not None:
        request.applymarker(pytest.mark.xfail(strict=True, raises=Rejected, reason=expected[0] + (
            f" (+{len(expected) - 1} more)" if len(expected) > 1 else "")))
    result = (await live_results(k8s_control_plane, slug))[state]
    if result.rejected:
        if expected is not None and tuple(result.rejected) != expected:
            pytest.fail("rejected, but not as REJECTED expects:\n" + "\n".join(result.rejected)
                        + "\nexpected:\n" + "\n".join(expected))
        raise Rejected("the API server rejected fixture objects:\n" + "\n".join(result.rejected))
    if result.missing:
        not_served = ", ".join(f"{k} {n}" for k, n in result.missing)
        pytest.skip(f"kinds not served by the control plane (no CRD): {not_served}; "
                    f"created and valid: {len(result.created)} objects "
                    f"({', '.join(f'{k} {n}' for k, n in result.created)})")
    assert not result.error, result.error
    assert result.view is not None, f"root not listed live; listed: {result.listed}"

    docs = load(slug, state)
    root = docs[0]
    assert result.listed == [f"{root['kind']}/{root['metadata']['name']}"], "the fixture is one workload"
    pure = resolve_objects(definition(slug), docs)
    back = {live: fixture for fixture, live in result.uids.items()}
    back[result.namespace] = pure.namespace or ""

    got, want = summary(result.view), summary(pure)
    got = {k: replace_strings(v, back) for k, v in got.items()}
    assert got["errors"] == want["errors"]
    assert got["phase"] == want["phase"]
    assert got["phases"] == want["phases"]
    assert got["roles"] == want["roles"]
    assert list(got["roles"]) == list(want["roles"]), "role order"
    assert got["pods"] == want["pods"]
    assert got["gpu"] == want["gpu"]
    assert got["instances"] == want["instances"]
    assert got["unattributed"] == want["unattributed"]
    diff = differences(_normalise(result.view.to_dict(), back), _normalise(pure.to_dict(), {}))
    assert diff == [], "live JSON view differs from the pure one:\n" + "\n".join(diff)
