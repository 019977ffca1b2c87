"""API (thin): starlette routes, REST handlers, health, metrics, OpenAPI and the GraphQL view.

May import ``schema``, ``server.service``, ``server.state`` and lower layers; never
``kubernetes_asyncio`` (cluster wiring lives in ``server.app``).
"""
