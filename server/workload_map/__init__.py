"""workload-map-server: one uniform view of distributed AI workloads in Kubernetes.

Layers (a layer imports only layers below it):
    workload_map.cli, workload_map.app
    workload_map.api
    workload_map.graphql
    workload_map.service
    workload_map.kube | workload_map.resolution
    workload_map.definitions
    workload_map.jq
    workload_map.config, workload_map.errors, workload_map.gvk, workload_map.logs
"""


__version__ = "0.1.0"
