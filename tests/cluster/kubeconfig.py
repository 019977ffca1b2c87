"""Write a single-user kubeconfig with embedded (base64) CA and credentials."""

from __future__ import annotations

import base64
from pathlib import Path

import yaml


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def write_kubeconfig(path: Path, server: str, ca_file: Path, user: str, *,
                     cert: Path | None = None, key: Path | None = None,
                     token: str | None = None) -> Path:
    """Write a kubeconfig for ``user`` at ``path`` (mode 0600) and return ``path``.

    Cluster ``wmap-test`` at ``server`` trusting ``ca_file``; credentials are either a client
    ``cert`` + ``key`` (PEM files, embedded as data) or a bearer ``token``. The context is named
    after the user, namespace ``default``. Raises ``ValueError`` without credentials.
    """
    if token is not None:
        cred: dict = {"token": token}
    elif cert is not None and key is not None:
        cred = {"client-certificate-data": _b64(cert), "client-key-data": _b64(key)}
    else:
        raise ValueError("need cert+key or token")
    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": "wmap-test",
                      "cluster": {"server": server, "certificate-authority-data": _b64(ca_file)}}],
        "users": [{"name": user, "user": cred}],
        "contexts": [{"name": user,
                      "context": {"cluster": "wmap-test", "user": user, "namespace": "default"}}],
        "current-context": user,
    }
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    path.chmod(0o600)
    return path
