"""Shared GPUs: KAI Scheduler / Run:ai fractional GPU annotations on a pod (or pod template).

KAI Scheduler "GPU Sharing" (docs/gpu-sharing in NVIDIA/KAI-Scheduler; the Run:ai
scheduler reads the same annotations) lets a pod ask for part of a GPU without any
``nvidia.com/gpu`` request, through ``metadata.annotations``:

* ``gpu-fraction``: the portion of one device, a number with ``0 < value < 1``;
* ``gpu-fraction-num-devices``: how many devices each get that portion (a positive integer,
  default 1), so the pod holds ``fraction x devices`` GPUs;
* ``gpu-memory``: GPU memory in MiB (a positive integer) instead of a fraction. This is
  memory, not a device count: it is kept under :data:`GPU_MEMORY` in bytes and never added
  to the GPU total (the share of a device it amounts to depends on the node's GPU model).

KAI's admission rejects a pod that combines a fraction with a whole ``nvidia.com/gpu``
request or limit; here such a pod keeps its whole request and the annotation is reported.
Values outside the rules above are reported as errors naming the annotation and ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from workload_map.resolution.resources import Requests

GPU_FRACTION = "gpu-fraction"
GPU_FRACTION_NUM_DEVICES = "gpu-fraction-num-devices"
GPU_MEMORY_ANNOTATION = "gpu-memory"
#: Resource key of annotation-requested GPU memory (bytes) in ``byResource``.
GPU_MEMORY = "gpu-memory"
#: The resource a fraction is counted as.
FRACTION_RESOURCE = "nvidia.com/gpu"
MIB = 2**20


def _decimal(raw: Any) -> Decimal | None:
    if not isinstance(raw, str) or not raw.strip():
        return None
    try:
        value = Decimal(raw.strip())
    except InvalidOperation:
        return None
    return value if value.is_finite() else None


def _devices(annotations: Mapping[str, Any], errors: list[str]) -> int | None:
    raw = annotations.get(GPU_FRACTION_NUM_DEVICES)
    if raw is None:
        return 1
    value = _decimal(raw)
    if value is None or value <= 0 or value != value.to_integral_value():
        errors.append(f"annotation {GPU_FRACTION_NUM_DEVICES}: {raw!r} must be a positive whole number")
        return None
    return int(value)


def shared_gpu_requests(annotations: Any, requests: Mapping[str, Decimal]) -> tuple[Requests, list[str]]:
    """GPU demand a pod's annotations add to its effective requests.

    Args:
        annotations: the pod's (or pod template's) ``metadata.annotations``; anything not a
            mapping adds nothing.
        requests: the pod's effective requests (to detect a whole ``nvidia.com/gpu``).

    Returns:
        ``({"nvidia.com/gpu": fraction x devices}`` and/or ``{"gpu-memory": MiB x 2**20})``,
        and error messages, each naming the annotation. Never raises.
    """
    if not isinstance(annotations, Mapping):
        return {}, []
    errors: list[str] = []
    out: Requests = {}
    raw_fraction = annotations.get(GPU_FRACTION)
    if raw_fraction is not None:
        fraction = _decimal(raw_fraction)
        devices = _devices(annotations, errors)
        if fraction is None or not Decimal(0) < fraction < Decimal(1):
            errors.append(f"annotation {GPU_FRACTION}: {raw_fraction!r} must be a number above 0 and below 1")
        elif requests.get(FRACTION_RESOURCE):
            errors.append(f"annotation {GPU_FRACTION}: ignored, the pod also requests whole {FRACTION_RESOURCE}")
        elif devices is not None:
            out[FRACTION_RESOURCE] = fraction * devices
    raw_memory = annotations.get(GPU_MEMORY_ANNOTATION)
    if raw_memory is not None:
        mib = _decimal(raw_memory)
        if mib is None or mib <= 0 or mib != mib.to_integral_value():
            errors.append(f"annotation {GPU_MEMORY_ANNOTATION}: {raw_memory!r} must be a positive whole number of MiB")
        else:
            devices = _devices(annotations, []) or 1
            out[GPU_MEMORY] = mib * MIB * devices
    return out, errors
