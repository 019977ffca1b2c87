"""The route table of the app."""

from __future__ import annotations

from starlette.routing import BaseRoute, Route, WebSocketRoute

from server.api import actions, definitions, health, pods, rest
from server.api.graphql import graphql_app
from server.api.metrics import Metrics
from server.api.openapi import openapi

WORKLOAD = "/api/v1/namespaces/{namespace}/workloads/{group}/{kind}/{name}"


def build_routes(metrics: Metrics, *, max_subscriptions: int = 16,
                 allowed_origins: tuple[str, ...] = ()) -> list[BaseRoute]:
    """Every HTTP and WebSocket route (one GraphQL app serves both on ``/graphql``)."""
    gql = graphql_app(max_subscriptions=max_subscriptions, allowed_origins=allowed_origins)
    return [
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
        Route("/livez", health.livez, methods=["GET"]),
        Route("/readyz", health.readyz, methods=["GET"]),
        Route("/healthz", health.healthz, methods=["GET"]),
        Route("/metrics", metrics.endpoint, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
    ]
