"""RESOLUTION (pure, no I/O): workload object + definition + pods -> WorkloadView.

May import ``workload_map.definitions``, ``workload_map.jq`` and the standard library; never the
Kubernetes client, starlette or strawberry.
"""

from workload_map.resolution.resolver import resolve
from workload_map.resolution.resources import DEFAULT_GPU_POLICY, GpuPolicy, effective_pod_requests
from workload_map.resolution.view import ComponentView, InstanceView, PodView, RoleView, WorkloadView

__all__ = ["DEFAULT_GPU_POLICY", "ComponentView", "GpuPolicy", "InstanceView", "PodView", "RoleView", "WorkloadView",
           "effective_pod_requests", "resolve"]
