"""``/openapi.json`` is a valid OpenAPI 3.1 document (openapi-spec-validator).

The validator checks the served JSON against the OpenAPI 3.1 meta-schema and resolves
every path template against its declared path parameters, so an unquoted comma in a
handler docstring's YAML (which turns into a stray key) or an optional path parameter
fails here.
"""

from __future__ import annotations

import httpx
import openapi_spec_validator as validator


async def test_served_document_passes_the_validator(client: httpx.AsyncClient) -> None:
    doc = (await client.get("/openapi.json")).json()
    errors = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.OpenAPIV31SpecValidator(doc).iter_errors()]
    assert errors == []


async def test_both_list_routes_declare_their_path_parameters(client: httpx.AsyncClient) -> None:
    paths = (await client.get("/openapi.json")).json()["paths"]
    # the cluster-wide list has no path parameter; the namespaced one gets {namespace}
    # (required, as every path parameter must be) from the shared handler
    assert [p["name"] for p in paths["/api/v1/workloads"]["get"]["parameters"] if p["in"] == "path"] == []
    namespaced = [p for p in paths["/api/v1/namespaces/{namespace}/workloads"]["get"]["parameters"] if p["in"] == "path"]
    assert namespaced == [{"name": "namespace", "in": "path", "required": True, "schema": {"type": "string"}}]
    kind = next(p for p in paths["/api/v1/workloads"]["get"]["parameters"] if p["name"] == "kind")
    assert kind["description"].startswith("any of these types: kind (case-insensitive, or its plural)")


def test_a_broken_docstring_would_be_caught() -> None:
    # the same validator on the fault the docstrings had: an unquoted comma in flow YAML
    # becomes a key `case-insensitive` on the parameter, which OpenAPI 3.1 does not allow
    import yaml

    parameter = yaml.safe_load("{name: kind, in: query, schema: {type: string}, description: Kind, case-insensitive}")
    doc = {"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
           "paths": {"/x": {"get": {"parameters": [parameter], "responses": {"200": {"description": "ok"}}}}}}
    assert any("case-insensitive" in e.message for e in validator.OpenAPIV31SpecValidator(doc).iter_errors())
