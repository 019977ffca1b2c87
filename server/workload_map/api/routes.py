"""The route table of the app."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route, WebSocketRoute

from workload_map.api import actions, definitions, health, pods, rest, studio
from workload_map.api.graphiql import ASSETS_PREFIX, GraphiQLPage
from workload_map.api.graphql import graphql_app
from workload_map.api.metrics import Metrics
from workload_map.api.openapi import openapi
from workload_map.api.ui import UI_PREFIX, UiFiles

WORKLOAD = "/api/v1/namespaces/{namespace}/workloads/{group}/{kind}/{name}"


def build_routes(metrics: Metrics, *, max_subscriptions: int = 16, allowed_origins: tuple[str, ...] = (),
                 graphiql: GraphiQLPage | None = None, graphiql_enabled: bool = True) -> list[BaseRoute]:
    """Every HTTP and WebSocket route (one GraphQL app serves both on ``/graphql``).

    ``/`` redirects to the web page on ``/ui`` (``workload_map.api.ui``); GraphiQL stays on
    ``/graphql``; ``graphiql`` serves its local assets under ``/graphiql/assets/``.
    """
    gql = graphql_app(max_subscriptions=max_subscriptions, allowed_origins=allowed_origins,
                      graphiql=graphiql_enabled, page=graphiql)

    async def index(request: Request) -> Response:
        """The start page: the web page on /ui.

        ---
        summary: Start page (redirects to the web page on /ui)
        responses:
          '307': {description: 'redirect to /ui/ (the web page; GraphiQL is on /graphql)'}
        """
        return RedirectResponse(UI_PREFIX + "/", status_code=307)

    extra: list[BaseRoute] = [Route("/", index, methods=["GET"]), Mount(UI_PREFIX, app=UiFiles())]
    if graphiql is not None and graphiql_enabled:
        extra.append(Mount(ASSETS_PREFIX.rstrip("/"), app=graphiql))  # static files: not in /openapi.json
    return [*extra,
        Route("/graphql", gql, methods=["GET", "POST"]),
        WebSocketRoute("/graphql", gql),
        Route("/api/v1/workloads", rest.list_workloads, methods=["GET"]),
        Route("/api/v1/namespaces/{namespace}/workloads", rest.list_workloads, methods=["GET"]),
        Route(WORKLOAD, rest.get_workload, methods=["GET"]),
        Route(WORKLOAD + "/phase", rest.get_phase, methods=["GET"]),
        Route(WORKLOAD + "/pod-template", actions.patch_pod_template, methods=["PATCH"]),
        Route("/api/v1/namespaces/{namespace}/pods/{name}/workload", pods.get_pod_workload, methods=["GET"]),
        Route(WORKLOAD + "/suspend", actions.suspend, methods=["POST"]),
        Route(WORKLOAD + "/resume", actions.resume, methods=["POST"]),
        Route("/api/v1/workload-types", definitions.create_workload_type, methods=["POST"]),
        Route("/api/v1/workload-types", definitions.list_workload_types, methods=["GET"]),
        Route("/api/v1/workload-types/{id}", definitions.get_workload_type, methods=["GET"]),
        Route("/api/v1/workload-types/{id}", definitions.delete_workload_type, methods=["DELETE"]),
        Route("/api/v1/definitions", definitions.create_definition, methods=["POST"]),
        Route("/api/v1/definitions", definitions.list_definitions, methods=["GET"]),
        Route("/api/v1/definitions/{name}", definitions.get_definition, methods=["GET"]),
        Route("/api/v1/definitions/{name}", definitions.delete_definition, methods=["DELETE"]),
        Route("/api/v1/studio/evaluate", studio.evaluate, methods=["POST"]),
        Route("/livez", health.livez, methods=["GET"]),
        Route("/readyz", health.readyz, methods=["GET"]),
        Route("/healthz", health.healthz, methods=["GET"]),
        Route("/metrics", metrics.endpoint, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
    ]
