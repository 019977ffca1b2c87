"""Settings: one object, small documented sections, environment prefix ``WMAP_``.

Built once by the CLI (flags override environment) and passed down; nothing else reads
``os.environ``. Tests build ``Settings(...)`` directly.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def default_catalog_dir() -> Path:
    """``$WMAP_CATALOG_DIR``, else the repository's (or image's) ``catalog/``."""
    return Path(os.environ.get("WMAP_CATALOG_DIR") or REPO_ROOT / "catalog")


def default_sample_dir() -> Path:
    """The bundled sample snapshot served when no cluster is configured."""
    return Path(os.environ.get("WMAP_SAMPLE_DIR") or REPO_ROOT / "server" / "sample")


@dataclass(slots=True)
class HttpSettings:
    """Where to listen. The default stays on loopback; the container sets 0.0.0.0."""

    host: str = "127.0.0.1"
    port: int = 8080
    max_body_bytes: int = 2 * 1024 * 1024
    request_timeout_s: float = 30.0


@dataclass(slots=True)
class KubeSettings:
    """Cluster access: kubeconfig chosen as kubectl does, or a snapshot instead."""

    kubeconfig: str | None = None
    context: str | None = None
    namespaces: tuple[str, ...] = ()
    snapshot: tuple[str, ...] = ()
    install_karta_crd: bool = False
    cluster_name: str = ""
    """Name reported in the GraphQL ``cluster`` field (default: the context, or ``default``)."""


@dataclass(slots=True)
class Settings:
    """All configuration.

    Attributes:
        catalog_dir: built-in definitions.
        state_dir: where registered definitions are stored offline (snapshot mode).
        auth: ``kubernetes`` (TokenReview + SubjectAccessReview) or ``none`` (local only).
        log_format: ``text`` or ``json``.
        gpu_resources: extra resource names counted as whole GPUs.
    """

    http: HttpSettings = field(default_factory=HttpSettings)
    kube: KubeSettings = field(default_factory=KubeSettings)
    catalog_dir: Path = field(default_factory=default_catalog_dir)
    sample_dir: Path = field(default_factory=default_sample_dir)
    state_dir: Path = field(default_factory=lambda: Path(os.environ.get("WMAP_STATE_DIR") or ".wmap-state"))
    auth: str = "none"
    log_format: str = "text"
    log_level: str = "INFO"
    gpu_resources: tuple[str, ...] = ()
    metrics_public: bool = True
