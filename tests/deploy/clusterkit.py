"""REST helpers for the chart's cluster tests: discovery, rendered releases created for real,
acting as a service account (impersonation, SelfSubjectAccessReview, TokenRequest)."""

from __future__ import annotations

import time
from typing import Any

import httpx

from .helm import by_kind
from .kinds import GVK

RBAC_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
"""The kinds that make up the chart's identity and permissions."""


class Resources:
    """Discovery: GVK -> (collection path prefix, plural, namespaced), cached per client."""

    def __init__(self, client: httpx.Client) -> None:
        self.client = client
        self._groups: dict[str, list[dict[str, Any]]] = {}

    def find(self, gvk: GVK) -> tuple[str, str, bool] | None:
        group, version, kind = gvk
        base = f"/apis/{group}/{version}" if group else f"/api/{version}"
        if base not in self._groups:
            r = self.client.get(base)
            self._groups[base] = r.json().get("resources", []) if r.status_code == 200 else []
        for res in self._groups[base]:
            if res["kind"] == kind and "/" not in res["name"]:
                return base, res["name"], res["namespaced"]
        return None

    def collection(self, obj: dict[str, Any]) -> str:
        group, _, version = obj["apiVersion"].rpartition("/")
        found = self.find((group, version, obj["kind"]))
        assert found, f"the test API server does not serve {obj['apiVersion']} {obj['kind']}"
        base, plural, namespaced = found
        ns = obj["metadata"].get("namespace")
        return f"{base}/namespaces/{ns}/{plural}" if namespaced else f"{base}/{plural}"


def gvk_of(obj: dict[str, Any]) -> GVK:
    """``(group, version, kind)`` of an object."""
    group, _, version = obj["apiVersion"].rpartition("/")
    return group, version, obj["kind"]


def as_user(user: str) -> dict[str, str]:
    """Headers that make the admin client act as ``user``."""
    return {"Impersonate-User": user}


def access(client: httpx.Client, headers: dict[str, str], verb: str, group: str, resource: str,
           namespace: str = "") -> bool:
    """SelfSubjectAccessReview as the impersonated identity (``resource`` may be ``kartas/status``)."""
    resource, _, subresource = resource.partition("/")
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"verb": verb, "group": group, "resource": resource,
                                            "subresource": subresource, "namespace": namespace}}}
    r = client.post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", json=body, headers=headers)
    assert r.status_code == 201, r.text
    return bool(r.json()["status"].get("allowed"))


def can_watch(client: httpx.Client, path: str, headers: dict[str, str], timeout: float = 30.0) -> int:
    """Open a watch on ``path`` (1 s server timeout) and return its status code.

    429 ("storage is (re)initializing": the watch cache of a fresh CRD is not ready yet) is
    retried after its Retry-After, as client-go's reflector does, for at most ``timeout`` s.
    """
    deadline = time.monotonic() + timeout
    while True:
        with client.stream("GET", path, params={"watch": "1", "timeoutSeconds": "1",
                                                "allowWatchBookmarks": "true"},
                           headers=headers, timeout=15) as r:
            status, retry = r.status_code, float(r.headers.get("retry-after") or 1)
        if status != 429 or time.monotonic() + retry > deadline:
            return status
        time.sleep(retry)


class Release:
    """The objects of one rendered release; ``create`` makes some for real, ``delete`` removes them.

    Attributes:
        name: the release name. objects: the rendered objects. created: API paths created.
    """

    def __init__(self, admin: httpx.Client, objects: list[dict[str, Any]], name: str) -> None:
        self.admin, self.objects, self.name = admin, objects, name
        self.created: list[str] = []
        self.resources = Resources(admin)

    def create(self, *kinds: str) -> None:
        """Create (as admin, strict field validation) every rendered object of these kinds."""
        for obj in [o for o in self.objects if o["kind"] in kinds]:
            path = self.resources.collection(obj)
            r = self.admin.post(path, json=obj, params={"fieldValidation": "Strict"})
            assert r.status_code == 201, f"{obj['kind']} {obj['metadata']['name']}: {r.status_code} {r.text}"
            self.created.append(f"{path}/{obj['metadata']['name']}")

    def delete(self) -> None:
        """Delete what ``create`` made, newest first (namespaced ones go with the namespace too)."""
        for path in reversed(self.created):
            self.admin.delete(path)


def service_account_user(rel: Release, namespace: str) -> str:
    """The user name of the release's ServiceAccount."""
    (sa,) = by_kind(rel.objects, "ServiceAccount")
    return f"system:serviceaccount:{namespace}:{sa['metadata']['name']}"


def wait_rbac(admin: httpx.Client, headers: dict[str, str], group: str, resource: str, verb: str = "list",
              namespace: str = "", timeout: float = 15.0) -> None:
    """RBAC changes reach the authorizer through an informer: wait (bounded) until one applies."""
    deadline = time.monotonic() + timeout
    while not access(admin, headers, verb, group, resource, namespace):
        assert time.monotonic() < deadline, f"RBAC for {verb} {group}/{resource} not effective in {timeout} s"
        time.sleep(0.1)


def request_token(admin: httpx.Client, namespace: str, name: str) -> str:
    """A bound token (TokenRequest, 1 h) of ServiceAccount ``namespace/name``."""
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}}
    r = admin.post(f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", json=body)
    assert r.status_code == 201, r.text
    return str(r.json()["status"]["token"])
