"""Frozen dataclasses that cross the worker pipe pickle as a tuple of their fields (``frozen.quick_state``)."""

from __future__ import annotations

import dataclasses
import pickle
from decimal import Decimal

import pytest

from workload_map.materialization.worker import Inputs, Job
from workload_map.resolution.frozen import quick_state
from workload_map.resolution.resources import GpuPolicy, gpu_policy
from workload_map.resolution.view import Replicas


@pytest.mark.parametrize("cls", [Replicas, GpuPolicy, Inputs, Job])
def test_the_classes_of_the_pipe_use_it(cls: type) -> None:
    assert cls.__setstate__ is not dataclasses._dataclass_setstate  # type: ignore[attr-defined]
    assert cls.__setstate__.__qualname__ == "quick_state.<locals>.__setstate__"


def test_a_job_and_its_view_parts_come_back_equal() -> None:
    policy = gpu_policy(whole=["example.com/gpu"], shared=["example.com/shared"], dra_classes=["gpu.example.com"])
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "uid": "u"}}
    job = Job("uid-1", "definition-key", Inputs({"kind": "JobSet"}, [pod], [pod], "registered", policy))
    for value in (job, policy, Replicas(desired=3, current=2, ready=1)):
        back = pickle.loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        assert back == value and type(back) is type(value)
    back = pickle.loads(pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL))
    assert back.inputs.objects[0] is back.inputs.pods[0]  # shared objects stay shared in one message
    assert back.inputs.policy.is_whole("example.com/gpu") and back.inputs.policy.total(
        {"example.com/gpu": Decimal(2)}) == Decimal(2)


@quick_state
@dataclasses.dataclass(frozen=True, slots=True)
class One:
    value: int


def test_the_state_is_the_fields_in_order_and_a_one_field_class_works() -> None:
    assert One(7).__getstate__() == (7,)  # type: ignore[attr-defined]
    assert pickle.loads(pickle.dumps(One(7))) == One(7)
    assert Replicas(desired=3, current=2, ready=1).__getstate__()[:3] == (3, 2, 1)  # type: ignore[attr-defined]
    with pytest.raises(dataclasses.FrozenInstanceError):
        pickle.loads(pickle.dumps(One(7))).value = 8  # type: ignore[misc]
