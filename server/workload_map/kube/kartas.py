"""Karta custom resources (``kartas.run.ai``, cluster-scoped, ``run.ai/v1alpha1``): write side.

``KartaStore`` is the cluster implementation of ``workload_map.registration.stores.DefinitionStore``: a
registered definition becomes one Karta object named after the definition; reading
happens through the informer cache (``InformerCache.watch(KARTA_GVK)``) and
``workload_map.registration.following.DefinitionIntake.follow``, so ``load()`` returns nothing here.

``ensure_karta_crd`` reports whether the CRD is served and installs it only when asked
(``wmap serve --install-karta-crd``): the server never changes cluster-wide API surface
on its own. The CRD follows docs/definition-format.md section 1 (cluster scope, short name ``krt``,
``status`` subresource, printer columns); its schema keeps unknown fields because the
server validates definitions itself.

Errors: API failures become ``workload_map.definitions.stored.StoreError`` (403, 404 when the CRD is
missing, network, 5xx) or ``workload_map.errors.Conflict`` (409); upstream messages are logged,
not returned to callers.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml

from kubernetes_asyncio.client import CustomObjectsApi
from kubernetes_asyncio.client.exceptions import ApiException

from workload_map.errors import Conflict
from workload_map.definitions.stored import StoreError, StoredDefinition
from workload_map.gvk import KARTA_GVK
from workload_map.kube.api import KubeApi
from workload_map.kube.client import KubeClient
from workload_map.kube.errors import KubeApiError
from workload_map.logs import logger
from workload_map.paths import karta_crd_file

log = logger(__name__)

GROUP, VERSION, KIND, PLURAL = KARTA_GVK.group, KARTA_GVK.version, KARTA_GVK.kind, "kartas"
CRD_NAME = f"{PLURAL}.{GROUP}"
CrdState = Literal["present", "installed", "missing", "forbidden", "error"]


#: The Karta CRD manifest shipped with the project, inside the installed package
#: (``deploy/crds/``; the Helm chart templates the same schema).
KARTA_CRD_FILE = karta_crd_file()


def karta_crd(path: Path = KARTA_CRD_FILE) -> dict[str, Any]:
    """The ``apiextensions.k8s.io/v1`` manifest of the Karta CRD, with its full schema.

    Raises:
        OSError: the manifest file is missing (a packaging bug).
    """
    manifest: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return manifest


def _established(crd: Mapping[str, Any]) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


async def ensure_karta_crd(client: KubeClient, *, install: bool, timeout: float = 30.0) -> CrdState:
    """Report (and with ``install`` create) the Karta CRD; API errors are reported, not raised.

    Returns:
        ``present`` (already served), ``installed`` (created now and Established within
        ``timeout`` seconds), ``missing``, ``forbidden`` or ``error`` (details logged).
    """
    api = KubeApi(client)
    path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{CRD_NAME}"
    try:
        await api.get_json(path)
        return "present"
    except KubeApiError as exc:
        if exc.is_forbidden:
            log.warning("not allowed to read CRD %s; assuming it is missing", CRD_NAME)
        elif not exc.is_not_found:
            log.warning("cannot read CRD %s: %s", CRD_NAME, exc)
            return "error"
    if not install:
        log.warning("the %s CRD is not installed: definitions cannot be registered in the cluster "
                    "(start with --install-karta-crd to install it)", CRD_NAME)
        return "missing"
    try:
        # a plain dict body and reply: the CRD model classes reject some valid fields
        await client.api_client.call_api(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "POST", body=karta_crd(),
            header_params={"Content-Type": "application/json", "Accept": "application/json"},
            auth_settings=["BearerToken"], response_types_map={201: "object", 200: "object"})
    except ApiException as exc:
        if exc.status == 403:
            log.error("not allowed to create CRD %s", CRD_NAME)
            return "forbidden"
        if exc.status != 409:
            log.error("cannot create CRD %s: %s", CRD_NAME, _status_message(exc))
            return "error"
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        try:
            if _established(await api.get_json(path)):
                log.info("installed CRD %s", CRD_NAME)
                return "installed"
        except KubeApiError:
            pass
        await asyncio.sleep(0.2)
    log.error("CRD %s was created but is not Established after %.0f s", CRD_NAME, timeout)
    return "error"


class KartaStore:
    """Registered definitions as Karta objects (origin ``cluster``).

    Args:
        client: the shared API client.
    """

    origin = "cluster"

    def __init__(self, client: KubeClient) -> None:
        self._client = client

    @property
    def _api(self) -> CustomObjectsApi:
        return CustomObjectsApi(self._client.api_client)

    async def save(self, key: str, manifest: Mapping[str, Any]) -> None:
        """Create the Karta ``key``, or replace it (with its current resourceVersion).

        Raises:
            Conflict: it changed between read and write (409).
            StoreError: any other API failure (CRD missing, forbidden, network).
        """
        body = {**manifest, "apiVersion": f"{GROUP}/{VERSION}", "kind": KIND,
                "metadata": {**dict(manifest.get("metadata") or {}), "name": key}}
        try:
            current = await self._get(key)
            if current is None:
                await self._api.create_cluster_custom_object(GROUP, VERSION, PLURAL, body)
                return
            body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            await self._api.replace_cluster_custom_object(GROUP, VERSION, PLURAL, key, body)
        except ApiException as exc:
            raise _store_error(exc, f"write Karta {key}") from None

    async def _get(self, key: str) -> dict[str, Any] | None:
        try:
            current: dict[str, Any] = await self._api.get_cluster_custom_object(GROUP, VERSION, PLURAL, key)
        except ApiException as exc:
            if _is_object_not_found(exc):
                return None
            raise
        return current

    async def delete(self, key: str) -> bool:
        """Delete the Karta ``key``; False when it did not exist. Raises ``StoreError``."""
        try:
            await self._api.delete_cluster_custom_object(GROUP, VERSION, PLURAL, key)
        except ApiException as exc:
            if _is_object_not_found(exc):
                return False
            raise _store_error(exc, f"delete Karta {key}") from None
        return True

    async def load(self) -> list[StoredDefinition]:
        """Nothing: Kartas reach the registry through the informer (``Registrar.follow``)."""
        return []


def _status(exc: ApiException) -> dict[str, Any]:
    try:
        body = exc.body.decode() if isinstance(exc.body, bytes) else exc.body
        decoded = json.loads(body or "{}")
    except (ValueError, UnicodeDecodeError):
        return {}
    return decoded if isinstance(decoded, dict) else {}


def _status_message(exc: ApiException) -> str:
    return str(_status(exc).get("message") or exc.reason or exc.status)


def _is_object_not_found(exc: ApiException) -> bool:
    """404 for a missing object (the CRD itself exists): the Status names a ``karta``."""
    if exc.status != 404:
        return False
    details = _status(exc).get("details") or {}
    return bool(details.get("name")) and details.get("kind") in (PLURAL, "karta", KIND)


def _store_error(exc: ApiException, action: str) -> Exception:
    log.warning("cannot %s: %s %s", action, exc.status, _status_message(exc))
    if exc.status == 409:
        return Conflict(f"cannot {action}: it was changed concurrently; retry")
    if exc.status == 404:
        return StoreError(f"cannot {action}: the {CRD_NAME} CRD is not installed "
                          "(start the server with --install-karta-crd)")
    if exc.status == 403:
        return StoreError(f"cannot {action}: the server's credentials are not allowed to")
    return StoreError(f"cannot {action}: the API server answered {exc.status} {exc.reason or ''}".rstrip())
