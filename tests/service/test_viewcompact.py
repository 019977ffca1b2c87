"""Views compacted on arrival from the resolver pool stay equal and share read-only values."""

from __future__ import annotations

import copy
import json
import pickle
from decimal import Decimal
from typing import Any

import pytest
import yaml

from workload_map.resolution.frozen import EMPTY_MAP, FrozenDict, FrozenList
from workload_map.resolution.view import GpuFigures, PodView
from workload_map.materialization.compaction import compact_view
from tests.catalog.support import catalog, fixture_states, resolve_fixture

JOBSET = "jobset-x-k8s-io-jobset-v1alpha2"


def _arrived(slug: str, state: str) -> Any:
    """A view as the materializer receives it: pickled by a worker, unpickled here."""
    return pickle.loads(pickle.dumps(resolve_fixture(slug, state)))


def _pods(view: Any) -> list[PodView]:
    return [p for c in view.all_components() for i in c.instances for p in i.pods]


def _cases() -> list[Any]:
    return [pytest.param(e.definition.name, s, id=f"{e.definition.name}/{s}")
            for e in catalog() for s in fixture_states(e.definition.name)]


@pytest.mark.parametrize(("slug", "state"), _cases())
def test_compacted_view_serialises_as_the_view_as_resolved(slug: str, state: str) -> None:
    view = resolve_fixture(slug, state)
    arrived = _arrived(slug, state)
    assert compact_view(arrived) is arrived
    assert arrived == view
    assert arrived.to_dict() == view.to_dict()
    assert json.dumps(arrived.to_dict(), sort_keys=True) == json.dumps(view.to_dict(), sort_keys=True)
    assert yaml.safe_dump(arrived.to_dict()) == yaml.safe_dump(view.to_dict())  # plain containers out
    assert pickle.loads(pickle.dumps(arrived)).to_dict() == view.to_dict()
    assert copy.deepcopy(arrived).to_dict() == view.to_dict()


def test_two_views_with_equal_requests_share_one_object() -> None:
    a = compact_view(_arrived(JOBSET, "running"))
    b = compact_view(_arrived(JOBSET, "running"))
    assert a is not b and a.to_dict() == b.to_dict()
    assert a.namespace is b.namespace and _pods(a)[0].phase is _pods(b)[0].phase
    assert a.policy is b.policy
    # every pod of the leader asks for {cpu 16, memory 128 GiB, nvidia.com/gpu 4}: one map for all
    pods = _pods(a) + _pods(b)
    leader = [p for p in pods if p.instance == "leader"]
    assert len(leader) == 2 and leader[0].requests["nvidia.com/gpu"] == Decimal(4)
    assert type(leader[0].requests) is FrozenDict and leader[0].requests is leader[1].requests
    # the defaults and empty containers are one shared object in both views
    assert _pods(a)[0].shared_claims is EMPTY_MAP and _pods(b)[0].shared_claims is EMPTY_MAP
    assert a.errors == [] and a.errors is b.errors and type(a.errors) is FrozenList
    assert a.phases is b.phases and a.conditions is b.conditions
    assert a.gpu is b.gpu and a.components[0].gpu is b.components[0].gpu  # equal figures: one record
    assert a.replicas is b.replicas and a.components[0].replicas is b.components[0].replicas  # frozen
    # lists of pods are read-only but never shared between workloads
    assert a.components[0].pods is not b.components[0].pods and type(a.components[0].pods) is FrozenList


def test_a_component_with_one_instance_shares_its_pod_list_with_it() -> None:
    # PyTorchJob running: master (1 pod) and worker (3 pods), one instance each, whose pods
    # are the component's pods: one read-only list each, not two
    view = compact_view(_arrived("kubeflow-org-pytorchjob-v1", "running"))
    single = [c for c in view.all_components() if len(c.instances) == 1 and c.pods]
    assert sorted((c.name, len(c.pods)) for c in single) == [("master", 1), ("worker", 3)]
    assert all(c.pods is c.instances[0].pods for c in single)


def test_shared_containers_refuse_changes() -> None:
    view = compact_view(_arrived(JOBSET, "running"))
    requests = _pods(view)[0].requests
    with pytest.raises(TypeError, match="read-only"):
        requests["nvidia.com/gpu"] = Decimal(8)
    with pytest.raises(TypeError, match="read-only"):
        requests.update(cpu=Decimal(1))
    with pytest.raises(TypeError, match="read-only"):
        view.components[0].pods.append(_pods(view)[0])
    with pytest.raises(AttributeError):
        view.gpu.unknown["requestedBySpec"].add("nvidia.com/gpu")  # a frozenset now
    with pytest.raises(TypeError, match="read-only"):  # a shared GpuFigures: merge changes its maps
        view.gpu.merge(GpuFigures({"nvidia.com/gpu": Decimal(1)}))
    assert requests["nvidia.com/gpu"] == Decimal(4)  # unchanged
    assert view.gpu.to_dict()["requestedBySpec"] == 12  # leader 1 x 4 + workers 2 x 4 GPUs, unchanged
    copied = dict(requests)
    copied["cpu"] = Decimal(1)  # a copy is an ordinary dict
    assert requests["cpu"] == Decimal(16)


def test_equal_but_differently_printed_values_stay_apart() -> None:
    # Decimal("1") == Decimal("1.0") and 1 == True, but they print differently: never merged
    a = compact_view({"x": [{"gpu": Decimal("1")}, {"n": 1}]})
    b = compact_view({"x": [{"gpu": Decimal("1.0")}, {"n": True}]})
    assert str(a["x"][0]["gpu"]) == "1" and str(b["x"][0]["gpu"]) == "1.0"
    assert a["x"][1]["n"] is not b["x"][1]["n"]
    assert a["x"] is not b["x"]


def test_values_of_different_types_never_share_a_container() -> None:
    """Table keys name each item's type: a str-valued enum member is not its string, a tuple not a
    list, 0.0 not -0.0, 1 not 1.0; equal values of the same types do share."""
    from workload_map.resolution.view import Phase

    running = compact_view({"phase": Phase.RUNNING})
    as_text = compact_view({"phase": str(Phase.RUNNING.value)})
    assert running == {"phase": Phase.RUNNING} and running is not as_text
    assert running["phase"] is Phase.RUNNING
    assert compact_view({"phase": Phase.RUNNING}) is running  # the same member: one map
    pair, listed = compact_view(("a", 1)), compact_view(["a", 1])
    assert pair == ("a", 1) and isinstance(pair, tuple) and isinstance(listed, FrozenList) and pair is not listed
    assert compact_view({"f": 0.0}) is not compact_view({"f": -0.0})
    assert compact_view({"n": 1}) is not compact_view({"n": 1.0})
    assert compact_view({"names": {"b", "a"}}) is compact_view({"names": {"a", "b"}})
    long = "x" * 65  # longer than INTERN_MAX: seldom repeats, so a map holding it is kept apart
    assert compact_view({"message": long}) is not compact_view({"message": long})
    one = compact_view(GpuFigures({"nvidia.com/gpu": Decimal(2)}, {}, {}))
    assert compact_view(GpuFigures({"nvidia.com/gpu": Decimal(2)}, {}, {})) is one
    assert compact_view(GpuFigures({"nvidia.com/gpu": Decimal("2.0")}, {}, {})) is not one
