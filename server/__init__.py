"""workload-map-server: one uniform view of distributed AI workloads in Kubernetes.

Layers (a layer imports only layers below it):
    server.cli, server.app
    server.api
    schema
    server.service
    server.kube | server.resolution
    server.definitions
    server.jq
    server.config, server.errors, server.gvk, server.logs
"""

__version__ = "0.1.0"
