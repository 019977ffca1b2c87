"""kubectl's conventions for ``wmap get``/``describe``: AGE, label selectors, namespace.

* AGE: ``HumanDuration`` of k8s.io/apimachinery ``pkg/util/duration`` (two units while
  the figure is small, one unit beyond; thresholds in ``human_duration``).
* Label selectors: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors
  (equality-based ``a=b``, ``a==b``, ``a!=b``; set-based ``a in (x,y)``, ``a notin (x)``,
  ``a``, ``!a``; requirements joined by ``,`` are ANDed).
* Default namespace: the kubeconfig context's ``namespace``, else ``default``
  (https://kubernetes.io/docs/reference/kubectl/#in-cluster-authentication-and-namespace-overrides;
  in a pod, the service account's ``namespace`` file).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from workload_map.errors import ServerError
from workload_map.kube.selectors import Requirement, matches, parse_selector

__all__ = ["Requirement", "matches", "parse_selector"]

if TYPE_CHECKING:
    from workload_map.kube.client import KubeClient


_DAY, _YEAR = 24, 24 * 365
CONNECT_TIMEOUT_S = 10.0


class ClusterUnreachable(ServerError):
    """The API server did not answer (connection refused, DNS failure, timeout)."""

    code = "cluster_unreachable"


async def connect_reachable(kubeconfig: str | None, context: str | None,
                            timeout: float = CONNECT_TIMEOUT_S, *, args: Any = None) -> KubeClient:
    """A client whose API server answered ``GET /version`` within ``timeout`` seconds.

    Any HTTP answer (even 401/403) counts as reachable; the informers report those.

    Raises:
        ClusterConfigError: no usable kubeconfig / service account.
        ClusterUnreachable: a network error or no answer in time (the message names the host).
    """
    # the Kubernetes client (kubernetes_asyncio, aiohttp) and asyncio only when a cluster is
    # read: files (``--snapshot``, ``-f``) never import them
    import asyncio

    from workload_map.kube.api import KubeApi
    from workload_map.kube.client import connect
    from workload_map.kube.errors import NETWORK, KubeApiError

    from workload_map.kube.overrides import connect_with

    client = await (connect_with(kubeconfig, context, connection_flags(args)) if args is not None
                    else connect(kubeconfig, context=context))
    try:
        async with asyncio.timeout(timeout):
            await KubeApi(client).get_json("/version")
    except KubeApiError as exc:
        if exc.status == NETWORK:
            await client.close()
            raise ClusterUnreachable(f"cannot reach the API server {client.host}: {exc.message or exc}") from None
    except TimeoutError:
        await client.close()
        raise ClusterUnreachable(f"the API server {client.host} did not answer within {timeout:g}s") from None
    return client


def add_connection_flags(parser: Any) -> None:
    """Add kubectl's connection flags (``workload_map.kube.overrides``) to a command that reads a cluster."""
    parser.add_argument("--server", default="", help="the API server address (overrides the kubeconfig)")
    parser.add_argument("--token", default="", help="bearer token for the API server")
    parser.add_argument("--user", default="", help="the kubeconfig user to use")
    parser.add_argument("--cluster", default="", help="the kubeconfig cluster to use")
    parser.add_argument("--insecure-skip-tls-verify", action="store_true",
                        help="do not check the API server's certificate (insecure)")
    parser.add_argument("--certificate-authority", default="", help="CA certificate file of the API server")


def connection_flags(args: Any) -> Any:
    """The ``ConnectionFlags`` of parsed ``args`` (absent flags: not given)."""
    from workload_map.kube.overrides import ConnectionFlags

    return ConnectionFlags(server=getattr(args, "server", "") or "", token=getattr(args, "token", "") or "",
                           user=getattr(args, "user", "") or "", cluster=getattr(args, "cluster", "") or "",
                           insecure_skip_tls_verify=bool(getattr(args, "insecure_skip_tls_verify", False)),
                           certificate_authority=getattr(args, "certificate_authority", "") or "")


def human_duration(seconds: float) -> str:
    """The AGE column kubectl prints for a duration of ``seconds``.

    Rule (apimachinery ``duration.HumanDuration``): below -1 s ``<invalid>``, -1 s ``0s``;
    under 2 min seconds (``119s``); under 10 min minutes and seconds (``5m10s``, ``5m``);
    under 3 h minutes (``125m``); under 8 h hours and minutes (``3h5m``); under 48 h hours;
    under 8 days days and hours (``3d4h``); under 2 years days; under 8 years years and
    days (``2y10d``); beyond, years.
    """
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return _two(minutes, "m", s % 60, "s")
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return _two(hours, "h", minutes % 60, "m")
    if hours < 48:
        return f"{hours}h"
    if hours < 8 * _DAY:
        return _two(hours // _DAY, "d", hours % _DAY, "h")
    if hours < 2 * _YEAR:
        return f"{hours // _DAY}d"
    if hours < 8 * _YEAR:
        return _two(hours // _YEAR, "y", (hours // _DAY) % 365, "d")
    return f"{hours // _YEAR}y"


def _two(big: int, big_unit: str, small: int, small_unit: str) -> str:
    return f"{big}{big_unit}" if small == 0 else f"{big}{big_unit}{small}{small_unit}"


def default_namespace(kubeconfig: str | None = None, context: str | None = None,
                      environ: Mapping[str, str] | None = None, sa_dir: Path | None = None) -> str:
    """The namespace kubectl uses when ``-n`` is not given.

    The chosen context's ``namespace`` in the kubeconfig (first file of ``$KUBECONFIG`` that
    defines the context wins, as in client-go's merge), the service account's namespace in a
    pod, else ``default``. An unreadable kubeconfig yields ``default`` (connecting reports it).
    ``sa_dir`` defaults to the service account directory ``workload_map.kube.client.SA_DIR``.
    """
    from workload_map.kube.client import SA_DIR, find_config_source

    source = find_config_source(kubeconfig, context=context, environ=environ, sa_dir=sa_dir or SA_DIR)
    if source is None:
        return "default"
    if source.kind == "in-cluster":
        try:
            return (source.sa_dir / "namespace").read_text(encoding="utf-8").strip() or "default"
        except OSError:
            return "default"
    configs = [_load(p) for p in source.path.split(os.pathsep) if p]
    name = context or next((c.get("current-context") for c in configs if c.get("current-context")), None)
    for config in configs:
        for entry in config.get("contexts") or []:
            if isinstance(entry, dict) and entry.get("name") == name:
                return str((entry.get("context") or {}).get("namespace") or "default")
    return "default"


def context_name(kubeconfig: str | None = None, context: str | None = None,
                 environ: Mapping[str, str] | None = None, sa_dir: Path | None = None) -> str:
    """The kubeconfig context kubectl would use: ``context``, else the first ``current-context``.

    ``in-cluster`` for the service account, ``""`` when nothing is configured or the
    kubeconfig names no current context. ``sa_dir`` defaults to ``workload_map.kube.client.SA_DIR``.
    """
    if context:
        return context
    from workload_map.kube.client import SA_DIR, find_config_source

    source = find_config_source(kubeconfig, context=context, environ=environ, sa_dir=sa_dir or SA_DIR)
    if source is None:
        return ""
    if source.kind == "in-cluster":
        return "in-cluster"
    configs = [_load(p) for p in source.path.split(os.pathsep) if p]
    return str(next((c.get("current-context") for c in configs if c.get("current-context")), ""))


def _load(path: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(Path(path).expanduser().read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}
