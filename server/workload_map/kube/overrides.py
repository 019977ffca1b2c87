"""The kubeconfig with kubectl's connection flags applied over it.

The flags: ``--server``, ``--token``, ``--user``, ``--cluster``, ``--insecure-skip-tls-verify``,
``--certificate-authority``. Semantics as kubectl's (https://kubernetes.io/docs/reference/kubectl/kubectl/): ``--cluster``
and ``--user`` pick those kubeconfig entries instead of the context's; ``--server``,
``--token``, ``--certificate-authority`` and ``--insecure-skip-tls-verify`` replace the
chosen values. ``--server`` works without any kubeconfig (with ``--token`` or anonymously).

Errors: ``workload_map.kube.client.ClusterConfigError`` for a missing kubeconfig, an unknown
cluster, user or context name.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from msgspec import Struct
import yaml

from kubernetes_asyncio.client import Configuration
from kubernetes_asyncio.config.config_exception import ConfigException
from kubernetes_asyncio.config.kube_config import load_kube_config_from_dict

from workload_map.kube.client import ClusterConfigError, ConfigSource, KubeClient, connect, find_config_source

OVERRIDE_CONTEXT = "wmap-flags"


class ConnectionFlags(Struct, frozen=True):
    """The flag values ("" / False: not given)."""

    server: str = ""
    token: str = ""
    user: str = ""
    cluster: str = ""
    insecure_skip_tls_verify: bool = False
    certificate_authority: str = ""

    def given(self) -> bool:
        """True when any flag is set."""
        return any((self.server, self.token, self.user, self.cluster, self.insecure_skip_tls_verify,
                    self.certificate_authority))


async def connect_with(kubeconfig: str | None, context: str | None, flags: ConnectionFlags) -> KubeClient:
    """A ``KubeClient`` as kubectl builds it from the kubeconfig and these flags."""
    if not flags.given():
        return await connect(kubeconfig, context=context)
    source = find_config_source(kubeconfig, context=context)
    configuration = Configuration()
    configuration.connection_pool_maxsize = 0
    if source is not None and source.kind == "kubeconfig" and source.exists():
        await _load(source, context, flags, configuration)
    elif not flags.server:
        raise ClusterConfigError("no kubeconfig ($KUBECONFIG, ~/.kube/config): give --server")
    else:
        source = ConfigSource("kubeconfig", "", context)
    _apply(flags, configuration)
    return KubeClient(configuration, source)


async def _load(source: ConfigSource, context: str | None, flags: ConnectionFlags, configuration: Any) -> None:
    merged = _merged(source.path)
    contexts = {c["name"]: c.get("context") or {} for c in merged.get("contexts") or []}
    name = context or merged.get("current-context") or ""
    if name and name not in contexts:
        raise ClusterConfigError(f"context {name!r} not found in {source.path}")
    chosen = dict(contexts.get(name) or {})
    for key, wanted, entries in (("cluster", flags.cluster, "clusters"), ("user", flags.user, "users")):
        if wanted:
            if wanted not in {e["name"] for e in merged.get(entries) or []}:
                raise ClusterConfigError(f"{key} {wanted!r} not found in {source.path}")
            chosen[key] = wanted
    if not chosen.get("cluster") and flags.server:
        merged["clusters"] = [*(merged.get("clusters") or []), {"name": OVERRIDE_CONTEXT,
                                                                "cluster": {"server": flags.server}}]
        chosen["cluster"] = OVERRIDE_CONTEXT
    if not chosen.get("user"):
        merged["users"] = [*(merged.get("users") or []), {"name": OVERRIDE_CONTEXT, "user": {}}]
        chosen["user"] = OVERRIDE_CONTEXT
    merged["contexts"] = [*(merged.get("contexts") or []), {"name": OVERRIDE_CONTEXT, "context": chosen}]
    try:
        await load_kube_config_from_dict(merged, context=OVERRIDE_CONTEXT, client_configuration=configuration)
    except (ConfigException, OSError, ValueError, KeyError, TypeError) as exc:
        raise ClusterConfigError(f"invalid {source}: {exc}") from exc


def _merged(paths: str) -> dict[str, Any]:
    """The kubeconfig files of ``paths`` (``os.pathsep``-joined), merged as kubectl does.

    The first file naming an entry (cluster, user, context) or ``current-context`` wins.
    """
    merged: dict[str, Any] = {"clusters": [], "users": [], "contexts": []}
    for path in (Path(p).expanduser() for p in paths.split(os.pathsep) if p):
        if not path.is_file():
            continue
        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ClusterConfigError(f"invalid kubeconfig {path}: {exc}") from exc
        if not isinstance(loaded, dict):
            raise ClusterConfigError(f"invalid kubeconfig {path}: not a mapping")
        merged.setdefault("current-context", loaded.get("current-context"))
        for key in ("clusters", "users", "contexts"):
            known = {e.get("name") for e in merged[key]}
            merged[key] += [e for e in loaded.get(key) or [] if isinstance(e, dict) and e.get("name") not in known]
    return merged


def _apply(flags: ConnectionFlags, configuration: Any) -> None:
    if flags.server:
        configuration.host = flags.server.rstrip("/")
    if flags.token:
        configuration.api_key["BearerToken"] = f"Bearer {flags.token}"
        configuration.cert_file = configuration.key_file = None
    if flags.certificate_authority:
        configuration.ssl_ca_cert = flags.certificate_authority
    if flags.insecure_skip_tls_verify:
        configuration.verify_ssl = False
