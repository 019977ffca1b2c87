"""RESOLUTION (pure, no I/O): workload object + definition + pods -> WorkloadView.

May import ``server.definitions``, ``server.jq`` and the standard library; never the
Kubernetes client, starlette or strawberry.
"""

from server.resolution.resolver import resolve
from server.resolution.resources import DEFAULT_GPU_POLICY, GpuPolicy, effective_pod_requests
from server.resolution.view import ComponentView, InstanceView, PodView, RoleView, WorkloadView

__all__ = ["DEFAULT_GPU_POLICY", "ComponentView", "GpuPolicy", "InstanceView", "PodView", "RoleView", "WorkloadView",
           "effective_pod_requests", "resolve"]
