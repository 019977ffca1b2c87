"""Effective pod requests (Kubernetes rule) and quantities, worked out by hand."""

from __future__ import annotations

from decimal import Decimal

import pytest

from workload_map.resolution import effective_pod_requests
from workload_map.resolution.quantity import QuantityError, format_quantity, parse_quantity
from workload_map.resolution.resources import DEFAULT_GPU_POLICY


def c(name: str, requests: dict | None = None, limits: dict | None = None, always: bool = False) -> dict:  # type: ignore[type-arg]
    container: dict = {"name": name, "resources": {}}  # type: ignore[type-arg]
    if requests:
        container["resources"]["requests"] = requests
    if limits:
        container["resources"]["limits"] = limits
    if always:
        container["restartPolicy"] = "Always"
    return container


@pytest.mark.parametrize(("text", "value"), [
    ("500m", "0.5"), ("2", "2"), ("1k", "1000"), ("1Ki", "1024"), ("8Gi", str(8 * 2**30)), ("1.5", "1.5"),
    ("1e3", "1000"), ("100M", "100000000"), ("250u", "0.00025"), (4, "4"), (0.5, "0.5"), ("+3", "3"),
])
def test_quantities(text: object, value: str) -> None:
    assert parse_quantity(text) == Decimal(value)


@pytest.mark.parametrize("bad", ["", "abc", "1Gb", "1.2.3", True, None, "--1", "1 Gi", " 4 ", "\uff14", "\u0664",
                                 "\uff11Gi", float("inf"), float("nan")])
def test_invalid_quantities_raise_a_clear_error(bad: object) -> None:
    with pytest.raises(QuantityError, match="invalid quantity"):
        parse_quantity(bad)


def test_format_quantity() -> None:
    assert format_quantity(Decimal("0.500")) == "0.5"
    assert format_quantity(Decimal("12.0")) == "12"


def test_requests_fall_back_to_limits_per_resource() -> None:
    # GPU only in limits counts; cpu from requests, not from the larger limit
    spec = {"containers": [c("main", requests={"cpu": "1"}, limits={"cpu": "4", "nvidia.com/gpu": "2"})]}
    assert effective_pod_requests(spec).requests == {"cpu": Decimal(1), "nvidia.com/gpu": Decimal(2)}


def test_largest_regular_init_container_wins_over_smaller_app_sum() -> None:
    # init needs 4 cpu alone; app containers 1 + 2 = 3 -> pod needs max(4, 3) = 4
    spec = {"initContainers": [c("prep", {"cpu": "4"}), c("small", {"cpu": "1"})],
            "containers": [c("a", {"cpu": "1"}), c("b", {"cpu": "2"})]}
    assert effective_pod_requests(spec).requests["cpu"] == Decimal(4)


def test_sidecars_add_to_steady_state_and_to_later_init_containers() -> None:
    # sidecar s (1 cpu, 1 gpu) starts first; regular init i (2 cpu) runs with it: 3 cpu, 1 gpu.
    # steady: app 1 cpu + sidecar 1 cpu = 2 cpu, gpu 1. Pod = max(3, 2) = 3 cpu, gpu 1.
    # Upstream's CLI omits "sidecars started before" and would say max(2, 2) = 2 cpu.
    spec = {"initContainers": [c("s", {"cpu": "1", "nvidia.com/gpu": "1"}, always=True), c("i", {"cpu": "2"})],
            "containers": [c("app", {"cpu": "1"})]}
    assert effective_pod_requests(spec).requests == {"cpu": Decimal(3), "nvidia.com/gpu": Decimal(1)}


def test_init_container_before_the_sidecar_does_not_count_it() -> None:
    # i (2 cpu) runs alone, then sidecar s (1 cpu) starts: init peak = max(2, 1) = 2; steady 1 + 1 = 2 -> 2
    spec = {"initContainers": [c("i", {"cpu": "2"}), c("s", {"cpu": "1"}, always=True)],
            "containers": [c("app", {"cpu": "1"})]}
    assert effective_pod_requests(spec).requests["cpu"] == Decimal(2)


def test_pod_level_resources_replace_and_overhead_adds() -> None:
    # containers sum to 3 cpu / 1Gi; pod-level cpu 2 replaces cpu only; overhead adds 250m and 64Mi
    spec = {"containers": [c("a", {"cpu": "1", "memory": "512Mi"}), c("b", {"cpu": "2", "memory": "512Mi"})],
            "resources": {"requests": {"cpu": "2"}}, "overhead": {"cpu": "250m", "memory": "64Mi"}}
    assert effective_pod_requests(spec).requests == {"cpu": Decimal("2.250"), "memory": Decimal(2**30 + 64 * 2**20)}


def test_mig_profiles_kept_per_profile_and_out_of_whole_gpu_total() -> None:
    spec = {"containers": [c("a", limits={"nvidia.com/mig-1g.10gb": "2", "nvidia.com/gpu": "1"}),
                           c("b", limits={"amd.com/gpu": "1", "gpu.intel.com/i915": "1"})]}
    requests = effective_pod_requests(spec).requests
    assert requests["nvidia.com/mig-1g.10gb"] == Decimal(2)
    assert DEFAULT_GPU_POLICY.total(requests) == Decimal(3)  # nvidia 1 + amd 1 + intel 1; MIG slices apart
    assert DEFAULT_GPU_POLICY.is_gpu("nvidia.com/mig-1g.10gb") and not DEFAULT_GPU_POLICY.is_whole(
        "nvidia.com/mig-1g.10gb")


def test_invalid_quantity_is_reported_not_raised() -> None:
    spec = {"containers": [c("a", {"cpu": "lots", "nvidia.com/gpu": "2"})]}
    result = effective_pod_requests(spec)
    assert result.requests == {"nvidia.com/gpu": Decimal(2)}
    assert result.errors == ["containers[0].resources.requests.cpu: invalid quantity 'lots'"]


def test_garbage_spec_gives_nothing() -> None:
    assert effective_pod_requests(None).requests == {}
    assert effective_pod_requests({"containers": "nope", "initContainers": [5]}).requests == {}


def test_negative_and_fractional_extended_quantities_are_errors() -> None:
    spec = {"containers": [c("a", {"cpu": "-1", "nvidia.com/gpu": "0.5", "memory": "1Gi"}),
                           c("b", limits={"amd.com/gpu": "500m", "nvidia.com/gpu": "1"})]}
    result = effective_pod_requests(spec)
    assert result.requests == {"memory": Decimal(2**30), "nvidia.com/gpu": Decimal(1)}
    assert result.errors == [
        "containers[0].resources.requests.cpu: quantity '-1' must not be negative",
        "containers[0].resources.requests.nvidia.com/gpu: extended resource quantity '0.5' must be a whole number",
        "containers[1].resources.limits.amd.com/gpu: extended resource quantity '500m' must be a whole number"]


def test_intel_gpu_devices_count_but_not_their_millicores_memory_or_tiles() -> None:
    spec = {"containers": [c("a", limits={"gpu.intel.com/i915": "1", "gpu.intel.com/millicores": "500",
                                          "gpu.intel.com/memory.max": "8Gi", "gpu.intel.com/tiles": "2",
                                          "amd.com/gpu": "2"})]}
    assert DEFAULT_GPU_POLICY.total(effective_pod_requests(spec).requests) == Decimal(3)


def test_gpu_total_counts_exactly_the_names_is_whole_counts() -> None:
    """``GpuPolicy.total`` writes ``is_whole``'s test out in its loop: the two must agree on every name."""
    from msgspec.structs import replace

    names = ["nvidia.com/gpu", "amd.com/gpu", "gpu.intel.com/i915", "gpu.intel.com/xe", "nvidia.com/mig-1g.10gb",
             "nvidia.com/gpu.shared", "gpu-memory", "cpu", "memory", "dra/gpu.nvidia.com", "dra/mig.nvidia.com",
             "dra/gpu.example.com", "dra/", "dra", "example.com/accel-a", "example.com/accel", ""]
    policies = [DEFAULT_GPU_POLICY,
                replace(DEFAULT_GPU_POLICY, whole_prefixes=("example.com/accel-",), dra_classes=frozenset({"gpu.example.com"})),
                replace(DEFAULT_GPU_POLICY, whole=frozenset(), dra_classes=frozenset())]
    for policy in policies:
        for count, name in enumerate(names, start=1):
            requests = {name: Decimal(count), "cpu": Decimal("0.5")}
            expected = Decimal(count) * policy.is_whole(name) + Decimal("0.5") * policy.is_whole("cpu")
            assert policy.total(requests) == expected, (policy, name)
    # hand-checked: the default policy counts nvidia, amd and intel devices and DRA GPU classes, not MIG slices
    every = {name: Decimal(1) for name in names}
    assert DEFAULT_GPU_POLICY.total(every) == Decimal(5)  # nvidia, amd, i915, xe, dra/gpu.nvidia.com


def test_a_shared_resources_block_is_read_once_and_never_changed_by_its_users() -> None:
    # pods of one template share one `resources` block object (the cache shares equal small
    # containers; a pickled batch keeps that): its requests are read once and reused, and the
    # sums built from it (sidecar + init, steady state, pod-level, overhead, shared-GPU
    # annotations) never write into the kept answer
    from workload_map.resolution import resources
    from workload_map.resolution.pods import pod_template_requests

    block = {"requests": {"cpu": "1", "nvidia.com/gpu": "1"}}
    sidecar = {"name": "s", "restartPolicy": "Always", "resources": block}
    spec = {"initContainers": [sidecar, {"name": "i", "resources": block}],
            "containers": [{"name": "a", "resources": block}, {"name": "b", "resources": block}],
            "overhead": {"cpu": "250m"}}
    # init: sidecar 1 cpu/1 gpu, then i with it: 2 cpu / 2 gpu; steady: sidecar + a + b = 3 cpu / 3 gpu;
    # max -> 3 cpu / 3 gpu, overhead +0.25 cpu
    expected = {"cpu": Decimal("3.25"), "nvidia.com/gpu": Decimal(3)}
    for _ in range(3):
        assert effective_pod_requests(spec).requests == expected
    kept = resources._read_blocks[id(block)]
    assert kept[0] is block and kept[1] == {"cpu": Decimal(1), "nvidia.com/gpu": Decimal(1)}
    # a shared-GPU annotation adds into the pod's requests, not into the kept block answer
    shared = pod_template_requests({"containers": [{"name": "a", "resources": block}]},
                                   {"gpu-fraction": "0.5"})
    assert shared.requests["cpu"] == Decimal(1)
    assert kept[1] == {"cpu": Decimal(1), "nvidia.com/gpu": Decimal(1)}
    assert effective_pod_requests(spec).requests == expected


def test_a_block_with_an_error_is_read_again_each_time_and_named_by_its_place() -> None:
    bad = {"requests": {"cpu": "lots", "nvidia.com/gpu": "2"}}
    spec = {"containers": [{"name": "a", "resources": bad}, {"name": "b", "resources": bad}]}
    for _ in range(2):
        result = effective_pod_requests(spec)
        assert result.requests == {"nvidia.com/gpu": Decimal(4)}
        assert result.errors == ["containers[0].resources.requests.cpu: invalid quantity 'lots'",
                                 "containers[1].resources.requests.cpu: invalid quantity 'lots'"]


def test_gpu_test_answers_as_is_gpu_per_policy_and_stays_bounded() -> None:
    from workload_map.resolution import resources
    from workload_map.resolution.resources import gpu_policy, gpu_test

    names = ["nvidia.com/gpu", "cpu", "memory", "nvidia.com/mig-1g.10gb", "nvidia.com/gpu.shared", "gpu-memory",
             "dra/gpu.nvidia.com", "dra/mig.nvidia.com", "example.com/accel", "dra/example.com"]
    custom = gpu_policy(whole=["example.com/accel"], dra_classes=["example.com"])
    for policy in (DEFAULT_GPU_POLICY, custom):
        test = gpu_test(policy)
        assert [test(n) for n in names] == [policy.is_gpu(n) for n in names]
        assert [test(n) for n in names] == [policy.is_gpu(n) for n in names]  # remembered answers alike
    # the two policies disagree on the custom names: each test is its policy's
    assert not gpu_test(DEFAULT_GPU_POLICY)("example.com/accel") and gpu_test(custom)("example.com/accel")
    # invented names cannot grow it past the bound
    test = gpu_test(custom)
    for i in range(resources.GPU_NAMES_KEPT + 10):
        test(f"example.com/r{i}")
    assert len(resources._GPU_TESTS[id(custom)]) <= resources.GPU_NAMES_KEPT
    assert gpu_test(custom)("example.com/accel")
