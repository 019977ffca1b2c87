"""The records that cross the worker pipe (a job, its inputs, a view's ``Replicas`` and ``GpuPolicy``).

They are ``msgspec.Struct`` classes: pickled by msgspec's own ``__reduce__`` (the class and
the tuple of its fields, written in C) and frozen where the view shares them.
"""

from __future__ import annotations

import pickle
from decimal import Decimal

import pytest

from workload_map.materialization.worker import Inputs, Job
from workload_map.resolution.resources import GpuPolicy, gpu_policy
from workload_map.resolution.view import Replicas


@pytest.mark.parametrize("cls", [Replicas, GpuPolicy, Inputs, Job])
def test_the_classes_of_the_pipe_are_frozen_records(cls: type) -> None:
    assert cls.__struct_config__.frozen  # type: ignore[attr-defined]


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


def test_a_record_is_pickled_as_its_class_and_fields_in_order_and_stays_frozen() -> None:
    replicas = Replicas(desired=3, current=2, ready=1)
    cls, state = replicas.__reduce__()
    assert cls is Replicas and state[:3] == (3, 2, 1)
    back = pickle.loads(pickle.dumps(replicas))
    with pytest.raises(AttributeError):
        back.desired = 8  # type: ignore[misc]
    assert back == replicas and hash(back) == hash(replicas)
