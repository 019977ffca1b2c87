"""Effective pod requests and GPU classification.

Kubernetes rule (kubernetes.io "Init Containers" section "Resource sharing within
containers", "Sidecar Containers", "Pod Overhead", and "Resource Management for Pods and
Containers" for pod-level resources; the same as ``resource.PodRequests`` used by the
scheduler and Kueue), per resource name:

1. A container's request is ``requests[name]``, falling back to ``limits[name]`` (the API
   server defaults requests to limits on Pods, but templates inside custom resources are
   not defaulted, so a GPU given only in limits still counts).
2. Init phase: walk init containers in order keeping the running sum of restartable
   sidecars (``restartPolicy: Always``) started so far. A regular init container needs
   ``its request + sidecars started before it``; a sidecar needs the running sidecar sum
   including itself. The init value is the largest of these.
3. Steady state = sum of app containers + sum of all sidecars.
4. Pod request = max(init value, steady state).
5. Pod-level ``spec.resources`` (requests, else limits) replaces the container aggregate
   for the resources it names.
6. ``spec.overhead`` (RuntimeClass) is added.

Upstream's CLI omits the "sidecars started before" term of step 2; we follow Kubernetes.
"""

from __future__ import annotations

from decimal import Decimal
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from msgspec import Struct, field

from workload_map.resolution.quantity import QuantityError, parse_quantity

Requests = dict[str, Decimal]


class GpuPolicy(Struct, frozen=True):
    """Which resource names are GPUs.

    Attributes:
        whole: exact names counted as whole GPU devices.
        whole_prefixes: name prefixes counted as whole devices (none by default: Intel's
            plugin exposes ``gpu.intel.com/i915`` and ``xe`` devices next to
            ``millicores``, ``memory.max`` and ``tiles``, which are not devices).
        partial_prefixes: name prefixes of partial devices kept per profile but not added
            to the whole-GPU total (``nvidia.com/mig-``).
        shared: time-sliced / MPS replicas of a GPU (the NVIDIA device plugin's
            ``renameByDefault`` advertises ``nvidia.com/gpu.shared``; operators may rename
            them, ``WMAP_SHARED_GPU_RESOURCES``): kept under their own name, never added to
            the whole-GPU total (a replica is a time share of a device, not a device).
        memory: GPU memory asked for by annotation (bytes, ``workload_map.resolution.sharing``):
            listed with the GPUs, never a device count.
        dra_classes: DeviceClass names whose DRA devices are whole GPUs
            (``WMAP_DRA_GPU_CLASSES``), counted under ``dra/<class>`` in the whole-GPU total.
        dra_partial_classes: DeviceClass names of GPU partitions (the NVIDIA DRA driver's
            ``mig.nvidia.com``): ``dra/<class>`` kept apart as MIG profiles are.
    """

    whole: frozenset[str] = frozenset({"nvidia.com/gpu", "amd.com/gpu", "gpu.intel.com/i915", "gpu.intel.com/xe"})
    whole_prefixes: tuple[str, ...] = ()
    partial_prefixes: tuple[str, ...] = ("nvidia.com/mig-",)
    shared: frozenset[str] = frozenset({"nvidia.com/gpu.shared"})
    memory: frozenset[str] = frozenset({"gpu-memory"})
    dra_classes: frozenset[str] = frozenset({"gpu.nvidia.com", "gpu.amd.com", "gpu.intel.com"})
    dra_partial_classes: frozenset[str] = frozenset({"mig.nvidia.com"})

    def is_gpu(self, name: str) -> bool:
        """True for any GPU-class resource (whole, partial, shared, GPU memory, DRA GPU)."""
        return (self.is_whole(name) or name.startswith(self.partial_prefixes) or name in self.shared
                or name in self.memory or (name.startswith("dra/") and name[4:] in self.dra_partial_classes))

    def is_whole(self, name: str) -> bool:
        """True when ``name`` counts toward the whole-GPU total."""
        return (name in self.whole or name.startswith(self.whole_prefixes)
                or (name.startswith("dra/") and name[4:] in self.dra_classes))

    def is_dra_gpu_class(self, device_class: str) -> bool:
        """True when DRA devices of ``device_class`` are GPUs (whole or partitions)."""
        return device_class in self.dra_classes or device_class in self.dra_partial_classes

    def total(self, requests: Mapping[str, Decimal]) -> Decimal:
        """Whole GPUs in ``requests``: the sum of the values whose names :meth:`is_whole` counts.

        The test of :meth:`is_whole` is written out in the loop: every GPU figure a query
        reads is one call (three per workload, role and instance of a page), and a method
        call per resource name was a fifth of a page's execution.
        """
        whole, prefixes, dra = self.whole, self.whole_prefixes, self.dra_classes
        out = Decimal(0)
        for name, value in requests.items():
            if name in whole or name.startswith(prefixes) or (name.startswith("dra/") and name[4:] in dra):
                out += value
        return out


def gpu_policy(whole: Iterable[str] = (), shared: Iterable[str] = (),
               dra_classes: Iterable[str] | None = None) -> "GpuPolicy":
    """The default policy extended by configuration.

    Args:
        whole: extra resource names counted as whole GPUs (``WMAP_GPU_RESOURCES``).
        shared: extra time-sliced/MPS resource names (``WMAP_SHARED_GPU_RESOURCES``).
        dra_classes: DeviceClass names counted as DRA GPUs (``WMAP_DRA_GPU_CLASSES``);
            None keeps the defaults, a list replaces them.
    """
    base = DEFAULT_GPU_POLICY
    return GpuPolicy(whole=base.whole | frozenset(whole), shared=base.shared | frozenset(shared),
                     dra_classes=base.dra_classes if dra_classes is None else frozenset(dra_classes))


DEFAULT_GPU_POLICY = GpuPolicy()


class _GpuNames(dict[str, bool]):
    """``GpuPolicy.is_gpu`` of one policy, remembered per resource name (``gpu_test``)."""

    __slots__ = ("policy",)

    def __init__(self, policy: GpuPolicy) -> None:
        super().__init__()
        self.policy = policy

    def __missing__(self, name: str) -> bool:
        answer = self.policy.is_gpu(name)
        if len(self) < GPU_NAMES_KEPT:
            self[name] = answer
        return answer


_GPU_TESTS: dict[int, _GpuNames] = {}
GPU_TESTS_KEPT = 64
"""Policies whose ``gpu_test`` is kept (a server has one, shared by every compacted view)."""

GPU_NAMES_KEPT = 4096
"""Resource names one ``gpu_test`` remembers (names are few; past the bound a new name is
asked of the policy each time: a bound against a stream of invented ones)."""


def gpu_test(policy: GpuPolicy) -> Callable[[str], bool]:
    """``policy.is_gpu`` as a lookup remembered per name: a dictionary's ``__getitem__``.

    The view store's aggregates ask it for every resource name of every figure of every
    bucket a view touches (56 times per generated workload, CPU and memory included, at
    about a microsecond each through ``is_whole``); answered from the dictionary after
    the first time. Kept per policy object (held, so its ``id`` stays unique), at most
    ``GPU_TESTS_KEPT`` policies and ``GPU_NAMES_KEPT`` names each.
    """
    names = _GPU_TESTS.get(id(policy))
    if names is None or names.policy is not policy:
        if len(_GPU_TESTS) >= GPU_TESTS_KEPT:
            _GPU_TESTS.clear()
        names = _GPU_TESTS[id(policy)] = _GpuNames(policy)
    return names.__getitem__


class RequestResult(Struct):
    """Effective requests of one pod spec, and quantity problems found on the way."""

    requests: Requests = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def is_extended(name: str) -> bool:
    """Extended resources (``<domain>/<name>`` outside ``kubernetes.io``) take whole numbers only."""
    return "/" in name and not name.startswith(("kubernetes.io/", "requests.", "hugepages-"))


def _read(block: Any, where: str, errors: list[str]) -> Requests:
    """Quantities of a requests/limits block; invalid ones are reported and skipped.

    Kubernetes rejects negative quantities and fractional extended resources
    ("Resource Management for Pods and Containers", extended resources), so those are
    errors here too rather than silently counted.
    """
    out: Requests = {}
    if not isinstance(block, Mapping):
        return out
    for name, raw in block.items():
        try:
            value = parse_quantity(raw)
        except QuantityError as exc:
            errors.append(f"{where}.{name}: {exc}")
            continue
        if value < 0:
            errors.append(f"{where}.{name}: quantity {raw!r} must not be negative")
        elif is_extended(str(name)) and value != value.to_integral_value():
            errors.append(f"{where}.{name}: extended resource quantity {raw!r} must be a whole number")
        else:
            out[str(name)] = value
    return out


READ_BLOCKS_KEPT = 4096
"""Most ``resources`` blocks whose requests are kept for reuse (``container_requests``)."""

_read_blocks: dict[int, tuple[Mapping[str, Any], Requests]] = {}


def container_requests(container: Any, where: str, errors: list[str]) -> Requests:
    """Requests of one container, falling back to limits per resource name.

    The answer depends on the container's ``resources`` block alone and is kept for that
    block object while it has no quantity error (at most ``READ_BLOCKS_KEPT`` blocks; the
    kept entry holds the block, so its ``id`` cannot be reused meanwhile). The pods of
    one template share one block object: the cache shares equal small containers
    (``workload_map.kube.compact``) and a pickled batch keeps that sharing, so a
    workload's pods are read once per template instead of once per pod. The returned
    dict may be shared: callers copy it before changing it (``_add``, ``_max`` do).
    """
    resources = container.get("resources") if isinstance(container, Mapping) else None
    if not isinstance(resources, Mapping):
        return {}
    kept = _read_blocks.get(id(resources))
    if kept is not None and kept[0] is resources:
        return kept[1]
    before = len(errors)
    limits = _read(resources.get("limits"), f"{where}.resources.limits", errors)
    requests = _read(resources.get("requests"), f"{where}.resources.requests", errors)
    out = {**limits, **requests}
    if len(errors) == before:  # an error names this container's place: not reusable
        if len(_read_blocks) >= READ_BLOCKS_KEPT:
            _read_blocks.clear()
        _read_blocks[id(resources)] = (resources, out)
    return out


def _add(a: Requests, b: Requests) -> Requests:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, Decimal(0)) + v
    return out


def _max(a: Requests, b: Requests) -> Requests:
    out = dict(a)
    for k, v in b.items():
        if v > out.get(k, Decimal(0)):
            out[k] = v
    return out


def effective_pod_requests(spec: Any) -> RequestResult:
    """Effective requests of a PodSpec dict by the Kubernetes rule (module docstring).

    Args:
        spec: a PodSpec as a dict (``containers``, ``initContainers``, ``resources``,
            ``overhead``); anything else yields empty requests.

    Returns:
        Requests by resource name (Decimal; CPU in cores, memory in bytes) and a list of
        quantity errors (each names the field). Invalid quantities are skipped, never
        raised.
    """
    result = RequestResult()
    if not isinstance(spec, Mapping):
        return result
    errors = result.errors
    sidecars: Requests = {}
    init_peak: Requests = {}
    for index, container in enumerate(_list(spec.get("initContainers"))):
        request = container_requests(container, f"initContainers[{index}]", errors)
        if isinstance(container, Mapping) and container.get("restartPolicy") == "Always":
            sidecars = _add(sidecars, request)
            init_peak = _max(init_peak, sidecars)
        else:
            init_peak = _max(init_peak, _add(request, sidecars))
    steady = dict(sidecars)
    for index, container in enumerate(_list(spec.get("containers"))):
        steady = _add(steady, container_requests(container, f"containers[{index}]", errors))
    total = _max(init_peak, steady)
    pod_level = spec.get("resources")
    if isinstance(pod_level, Mapping):
        total.update(container_requests({"resources": pod_level}, "resources", errors))
    total = _add(total, _read(spec.get("overhead"), "overhead", errors))
    result.requests = total
    return result


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def scale(requests: Mapping[str, Decimal], factor: int) -> Requests:
    """``requests`` multiplied by a replica count."""
    return {k: v * factor for k, v in requests.items()}


def add_into(target: Requests, extra: Mapping[str, Decimal]) -> None:
    """Add ``extra`` into ``target`` in place."""
    for k, v in extra.items():
        target[k] = target.get(k, Decimal(0)) + v
