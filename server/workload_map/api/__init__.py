"""API (thin): starlette routes, REST handlers, health, metrics, OpenAPI and the GraphQL view.

May import ``schema``, ``workload_map.service``, ``workload_map.auth`` and lower layers (the
import-linter contracts in pyproject.toml); never ``kubernetes_asyncio`` (cluster
wiring lives in ``workload_map.app``).
"""
