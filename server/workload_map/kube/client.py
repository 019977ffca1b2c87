"""API client configuration, chosen the way kubectl chooses it.

Precedence (kubernetes/client-go ``tools/clientcmd/loader.go``, ``ClientConfigLoadingRules``):

1. an explicit kubeconfig path (and optional context) from the caller's settings;
2. ``$KUBECONFIG``: ``:``-separated paths, merged, missing files ignored; when it is set
   ``~/.kube/config`` is not consulted;
3. ``~/.kube/config``;
4. the in-cluster service account (``KUBERNETES_SERVICE_HOST``/``_PORT`` plus the token
   and CA files under ``/var/run/secrets/kubernetes.io/serviceaccount``).

Bound service-account tokens expire (1 h by default) and the kubelet rewrites the token
file: one ``Configuration`` is shared by every request, its refresh hook re-reads the file
at most once a minute, and ``KubeClient.refresh_credentials`` (called by
``workload_map.kube.api`` on a 401 before its single retry) re-reads it at once. Sources:
tomplus/kubernetes_asyncio PRs 205 and 253 (copied configurations lose the refresh);
gtsystem/lightkube PR 141 (token re-read on 401).

The environment is passed in (``environ``), never read here behind the caller's back
except as the documented default.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from kubernetes_asyncio.client import ApiClient, Configuration
from kubernetes_asyncio.config import ConfigException, load_kube_config
from msgspec import Struct

from workload_map.errors import ServerError

SA_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
TOKEN_MAX_AGE = 60.0
"""Seconds a service-account token read from disk is used before it is read again."""


class ClusterConfigError(ServerError):
    """No usable cluster configuration (missing/invalid kubeconfig, no service account)."""

    code = "cluster_config"


class ConfigSource(Struct, frozen=True):
    """Where the cluster configuration comes from.

    Attributes:
        kind: ``kubeconfig`` or ``in-cluster``.
        path: kubeconfig path(s), ``:``-separated as in ``$KUBECONFIG`` ("" in-cluster).
        context: kubeconfig context, ``None`` for the file's current-context.
        host: in-cluster API server URL ("" for kubeconfig).
        sa_dir: in-cluster directory holding ``token`` and ``ca.crt``.
    """

    kind: Literal["kubeconfig", "in-cluster"]
    path: str = ""
    context: str | None = None
    host: str = ""
    sa_dir: Path = SA_DIR

    def __str__(self) -> str:
        if self.kind == "in-cluster":
            return f"in-cluster service account ({self.host})"
        return f"kubeconfig {self.path}" + (f" (context {self.context})" if self.context else "")

    def exists(self) -> bool:
        """True when the files this source needs are present."""
        if self.kind == "in-cluster":
            return (self.sa_dir / "token").is_file() and (self.sa_dir / "ca.crt").is_file()
        return any(Path(p).expanduser().is_file() for p in self.path.split(os.pathsep) if p)


def find_config_source(
    kubeconfig: str | None = None,
    *,
    context: str | None = None,
    environ: Mapping[str, str] | None = None,
    sa_dir: Path = SA_DIR,
) -> ConfigSource | None:
    """The configuration source kubectl would use, or ``None`` when there is none.

    An explicit ``kubeconfig`` is returned even when the file is missing (loading then
    fails, as kubectl does); the other candidates are used only when they exist.
    """
    env = os.environ if environ is None else environ
    if kubeconfig:
        return ConfigSource("kubeconfig", kubeconfig, context)
    candidates = []
    if env.get("KUBECONFIG"):
        candidates.append(ConfigSource("kubeconfig", env["KUBECONFIG"], context))
    elif env.get("HOME"):
        candidates.append(ConfigSource("kubeconfig", str(Path(env["HOME"]) / ".kube" / "config"), context))
    host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT")
    if host and port:
        netloc = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        candidates.append(ConfigSource("in-cluster", host=f"https://{netloc}", sa_dir=sa_dir))
    return next((c for c in candidates if c.exists()), None)


def has_cluster_config(
    kubeconfig: str | None = None, *, environ: Mapping[str, str] | None = None, sa_dir: Path = SA_DIR
) -> bool:
    """True when a kubeconfig or an in-cluster service account is available.

    The server serves a snapshot instead of live informers when this is false.
    """
    source = find_config_source(kubeconfig, environ=environ, sa_dir=sa_dir)
    return source is not None and source.exists()


class ServiceAccountToken:
    """The bearer token file of a (bound) service account, re-read as it rotates.

    Args:
        path: the token file.
        max_age: seconds a read token is reused before the file is read again.
    """

    def __init__(self, path: Path, *, max_age: float = TOKEN_MAX_AGE) -> None:
        self.path = path
        self.max_age = max_age
        self._token = ""
        self._read_at = float("-inf")

    def read(self) -> str:
        """Read the file now. Raises ``ClusterConfigError`` when missing or empty."""
        try:
            token = self.path.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ClusterConfigError(f"cannot read service-account token {self.path}: {exc}") from exc
        if not token:
            raise ClusterConfigError(f"service-account token {self.path} is empty")
        self._token, self._read_at = token, time.monotonic()
        return token

    def apply(self, configuration: Any, *, force: bool = False) -> None:
        """Put the token into ``configuration`` (re-reading the file when stale or forced)."""
        if force or time.monotonic() - self._read_at > self.max_age:
            self.read()
        configuration.api_key["BearerToken"] = "Bearer " + self._token


async def load_configuration(source: ConfigSource) -> tuple[Configuration, ServiceAccountToken | None]:
    """A fresh ``Configuration`` for ``source`` (and the token file for in-cluster).

    Raises:
        ClusterConfigError: the kubeconfig is missing or invalid, or the service-account
            files are unreadable.
    """
    configuration = Configuration()
    configuration.connection_pool_maxsize = 0  # one connection per watch: no pool limit
    if source.kind == "in-cluster":
        token = ServiceAccountToken(source.sa_dir / "token")
        token.apply(configuration, force=True)
        configuration.host = source.host
        configuration.ssl_ca_cert = str(source.sa_dir / "ca.crt")
        configuration.refresh_api_key_hook = token.apply
        return configuration, token
    await _load_kubeconfig(source, configuration)
    return configuration, None


async def _load_kubeconfig(source: ConfigSource, configuration: Configuration) -> None:
    if not source.exists():
        raise ClusterConfigError(f"kubeconfig not found: {source.path}")
    try:
        await load_kube_config(
            config_file=source.path, context=source.context,
            client_configuration=configuration, persist_config=False,
        )
    except (ConfigException, OSError, ValueError, KeyError, TypeError) as exc:
        raise ClusterConfigError(f"invalid {source}: {exc}") from exc


class KubeClient:
    """One API client for the process, sharing one ``Configuration``.

    Use ``connect()`` to build one; close it with ``await client.close()`` (or
    ``async with``). ``api_client`` is created on first use inside the running loop.
    """

    def __init__(
        self, configuration: Configuration, source: ConfigSource, token: ServiceAccountToken | None = None
    ) -> None:
        self.configuration = configuration
        self.source = source
        self._token = token
        self._api_client: ApiClient | None = None
        self.credential_refreshes = 0

    @property
    def host(self) -> str:
        """The API server URL."""
        return str(self.configuration.host)

    @property
    def api_client(self) -> ApiClient:
        """The shared ``ApiClient`` (created lazily, always with our ``Configuration``)."""
        if self._api_client is None:
            self._api_client = ApiClient(configuration=self.configuration)
        return self._api_client

    async def refresh_credentials(self) -> None:
        """Re-read credentials after a 401: the token file, or the kubeconfig (exec plugins).

        Raises:
            ClusterConfigError: the files became unreadable or invalid.
        """
        self.credential_refreshes += 1
        if self._token is not None:
            self._token.apply(self.configuration, force=True)
        else:
            await _load_kubeconfig(self.source, self.configuration)

    async def close(self) -> None:
        """Close the HTTP session (idempotent)."""
        if self._api_client is not None:
            client, self._api_client = self._api_client, None
            await client.close()

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def connect(
    kubeconfig: str | None = None,
    *,
    context: str | None = None,
    environ: Mapping[str, str] | None = None,
    sa_dir: Path = SA_DIR,
) -> KubeClient:
    """A ``KubeClient`` for the configuration kubectl would pick (see module docstring).

    Raises:
        ClusterConfigError: nothing configured, or the chosen source is unusable.
    """
    source = find_config_source(kubeconfig, context=context, environ=environ, sa_dir=sa_dir)
    if source is None:
        raise ClusterConfigError("no kubeconfig ($KUBECONFIG, ~/.kube/config) and not running in a cluster")
    configuration, token = await load_configuration(source)
    return KubeClient(configuration, source, token)
