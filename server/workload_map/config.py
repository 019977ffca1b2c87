"""Settings: one object, small documented sections, environment prefix ``WMAP_``.

Built once by the CLI (flags override environment) and passed down; nothing else reads
``os.environ``. Tests build ``Settings(...)`` directly.
"""

from __future__ import annotations

import os
from pathlib import Path

from msgspec import Struct, field

from workload_map.paths import default_catalog_dir, default_graphiql_assets_dir, default_sample_dir


DEFAULT_GRAPHQL_MAX_COST = 100_000
"""Default GraphQL cost budget (fields resolved, pages expanded; see ``workload_map.graphql.cost``)."""

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})


class HttpSettings(Struct):
    """Where to listen, and per-request bounds.

    The default stays on loopback; the container sets 0.0.0.0.

    Attributes:
        max_body_bytes: largest request body (413 above).
        request_timeout_s: time budget of one request until its response starts (504
            after); ``?wait=`` phase requests get their own wait plus a few seconds.
        max_wait_s: longest ``?wait=`` a phase request may ask for.
        max_subscriptions: GraphQL subscriptions per websocket connection.
        graphql_max_cost: most fields one GraphQL operation may resolve, fragments
            expanded and pages multiplied by ``first`` (:mod:`workload_map.graphql.cost`); the default
            lets a portal's page of 500 workloads with roles, instances and pods through
            (cost 39,001) and refuses three such pages in one document.
        cors_origins: browser origins (``https://portal.example.com``) allowed to call
            this server besides its own: CORS answers (with preflight) and writes accepted
            from them; every other origin's writes are refused (:mod:`workload_map.api.crosssite`).
        header_timeout_s: time a client has to send a request's headers (connection closed
            with 408 after; :mod:`workload_map.api.connections`).
        body_timeout_s: time a client has to send a request body once the handler reads it
            (JSON 408 after).
        max_connections: open connections; one more is answered 503 and closed.
        max_expensive: GraphQL operations and workload lists running at once
            (:mod:`workload_map.api.shedding`); ``expensive_queue`` more wait up to
            ``expensive_wait_s``, the rest get 503 with ``Retry-After``.
        max_waits_per_client: ``?wait=`` phase requests one client address may hold at
            once (429 beyond; :mod:`workload_map.api.waits`).
        max_definitions: definitions this server stores at most (429 beyond).
        max_definitions_bytes: total JSON size of the stored definitions (413 beyond).
        allowed_hosts: ``Host`` names writes may name besides the loopback names and
            ``host`` (DNS rebinding; :mod:`workload_map.api.crosssite`); ``*`` allows any.
    """

    host: str = "127.0.0.1"
    port: int = 8080
    max_body_bytes: int = 2 * 1024 * 1024
    request_timeout_s: float = 30.0
    max_wait_s: float = 600.0
    max_subscriptions: int = 16
    graphql_max_cost: int = DEFAULT_GRAPHQL_MAX_COST
    cors_origins: tuple[str, ...] = ()
    header_timeout_s: float = 10.0
    body_timeout_s: float = 10.0
    max_connections: int = 1000
    max_expensive: int = 8
    expensive_queue: int = 64
    expensive_wait_s: float = 10.0
    max_waits_per_client: int = 32
    max_definitions: int = 500
    max_definitions_bytes: int = 32 * 1024 * 1024
    allowed_hosts: tuple[str, ...] = ()

    @property
    def is_loopback(self) -> bool:
        """True when only this machine can connect (``127.0.0.0/8``, ``::1``, ``localhost``)."""
        return self.host in LOOPBACK_HOSTS or self.host.startswith("127.")


class AuthSettings(Struct):
    """Caller identity and permissions.

    Attributes:
        mode: ``kubernetes`` (bearer token checked with TokenReview, permissions with
            SubjectAccessReview; needs a cluster) or ``none`` (no checks; local use only).
        impersonate: with ``kubernetes``, write Karta objects as the caller
            (Impersonate-User/-Group) so the audit log names the real user; off, the server
            writes as itself after checking the caller's permission.
        cache_ttl_s: seconds an identity or a permission decision is reused.
        negative_ttl_s: seconds a rejected token is remembered.
        review_concurrency: most reviews in flight at once.
        audiences: audiences a token must be issued for (empty: the API server's default).
    """

    mode: str = "none"
    impersonate: bool = True
    cache_ttl_s: float = 30.0
    negative_ttl_s: float = 5.0
    review_concurrency: int = 16
    audiences: tuple[str, ...] = ()


class KubeSettings(Struct):
    """Cluster access: kubeconfig chosen as kubectl does, or a snapshot instead.

    ``kubeconfigs`` and ``contexts`` are the repeatable ``--kubeconfig`` / ``--context``
    values; two or more contexts (or files) serve several clusters together
    (``workload_map.kube.clusters``). ``kubeconfig`` (the paths ``:``-joined) and ``context``
    (set when exactly one is given) drive the single-cluster path.
    """

    kubeconfig: str | None = None
    context: str | None = None
    kubeconfigs: tuple[str, ...] = ()
    contexts: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = ()
    snapshot: tuple[str, ...] = ()
    install_karta_crd: bool = False
    cluster_name: str = ""
    """Name reported in the GraphQL ``cluster`` field (default: the context, or ``default``)."""
    stale_after_s: float = 30.0
    """Seconds a failing list/watch may last before answers are flagged stale."""
    karta_status: bool = True
    """Write Karta status (conditions, workload count) from the replica holding the Lease."""
    lease_namespace: str = ""
    """Namespace of that Lease ("": ``$POD_NAMESPACE``, the service account's, else ``default``)."""


class WebhookSettings(Struct):
    """The admission webhook listener (TLS), off while ``port`` is 0.

    Attributes:
        port: HTTPS port of the validating and mutating Karta webhooks.
        cert_file / key_file: PEM serving certificate (with its chain) and key.
    """

    port: int = 0
    cert_file: str = ""
    key_file: str = ""


class ResolverSettings(Struct):
    """Background resolution of workload views (``workload_map.service``).

    Attributes:
        workers: resolver worker processes; 0 means the usable CPU cores
            (``len(os.sched_getaffinity(0))``).
        timeout_s: hard budget of one resolution, seconds: the worker is ended past it and
            the workload gets an error view. The same budget bounds each job of the
            registration trial (one jq expression) and each studio evaluation, run on the
            same workers (docs/packages.md).
        quarantine_after: timeouts of one definition (per registry generation) after which
            its workloads get an error view without running.
    """

    workers: int = 0
    timeout_s: float = 2.0
    quarantine_after: int = 3


class Settings(Struct):
    """All configuration.

    Attributes:
        catalog_dir: built-in definitions.
        state_dir: where registered definitions are stored offline (snapshot mode).
        definitions_dir: extra definition files loaded at start (origin ``file``; the Helm
            chart mounts its ``extraDefinitions`` there); a bad file is skipped and logged.
        auth: caller identity and permissions (see :class:`AuthSettings`).
        log_format: ``text`` or ``json``.
        gpu_resources: extra resource names counted as whole GPUs.
        shared_gpu_resources: extra names of time-sliced / MPS GPU replicas (renamed shared
            resources; ``nvidia.com/gpu.shared`` is always one): kept under their own name,
            not added to whole GPUs.
        dra_gpu_classes: DRA DeviceClass names counted as GPUs (None: ``gpu.nvidia.com``,
            ``gpu.amd.com``, ``gpu.intel.com``); a value replaces the defaults.
        metrics_public: ``/metrics`` without authentication (else it needs ``get`` on the
            non-resource URL ``/metrics``).
        resolver: background resolution (see :class:`ResolverSettings`).
        workload_metrics: serve the per-workload series on ``/metrics``
            (``wmap_workload_info``, ``wmap_workload_gpus``): on by default.
        pod_metrics: also serve ``wmap_pod_workload_info``, one series per pod of a workload
            (with ``workload_metrics``); off by default so that the series stay bounded by the
            number of workloads, not of pods (docs/metrics-series.md has the counts).
        graphiql: serve the GraphiQL page on ``GET /graphql`` for browsers (off: JSON 404).
        graphiql_assets_dir: the pinned GraphiQL packages unpacked by ``graphiql/fetch.py``;
            when absent or incomplete, the page loads them from the CDN (logged at start).
    """

    http: HttpSettings = field(default_factory=HttpSettings)
    kube: KubeSettings = field(default_factory=KubeSettings)
    webhook: WebhookSettings = field(default_factory=WebhookSettings)
    catalog_dir: Path = field(default_factory=default_catalog_dir)
    sample_dir: Path = field(default_factory=default_sample_dir)
    state_dir: Path = field(default_factory=lambda: Path(os.environ.get("WMAP_STATE_DIR") or ".wmap-state"))
    definitions_dir: Path | None = field(
        default_factory=lambda: Path(os.environ["WMAP_DEFINITIONS_DIR"]) if os.environ.get("WMAP_DEFINITIONS_DIR")
        else None)
    auth: AuthSettings = field(default_factory=AuthSettings)
    log_format: str = "text"
    log_level: str = "INFO"
    gpu_resources: tuple[str, ...] = ()
    shared_gpu_resources: tuple[str, ...] = ()
    dra_gpu_classes: tuple[str, ...] | None = None
    metrics_public: bool = True
    resolver: ResolverSettings = field(default_factory=ResolverSettings)
    workload_metrics: bool = True
    pod_metrics: bool = False
    graphiql: bool = True
    graphiql_assets_dir: Path | None = field(default_factory=default_graphiql_assets_dir)


def _flag(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "yes", "on")


def _words(value: str) -> tuple[str, ...]:
    return tuple(w.strip() for w in value.split(",") if w.strip())


ENVIRONMENT: dict[str, tuple[str, object]] = {
    "WMAP_HOST": ("host", str),
    "WMAP_PORT": ("port", int),
    "WMAP_AUTH": ("auth", str),
    "WMAP_IMPERSONATE": ("impersonate", _flag),
    "WMAP_METRICS_PUBLIC": ("metrics_public", _flag),
    "WMAP_REQUEST_TIMEOUT": ("request_timeout", float),
    "WMAP_GRAPHQL_MAX_COST": ("graphql_max_cost", int),
    "WMAP_CORS_ORIGINS": ("cors_origin", _words),
    "WMAP_ALLOWED_HOSTS": ("allowed_hosts", _words),
    "WMAP_MAX_DEFINITIONS": ("max_definitions", int),
    "WMAP_MAX_DEFINITIONS_BYTES": ("max_definitions_bytes", int),
    "WMAP_MAX_CONNECTIONS": ("max_connections", int),
    "WMAP_MAX_EXPENSIVE_REQUESTS": ("max_expensive_requests", int),
    "WMAP_HEADER_TIMEOUT": ("header_timeout", float),
    "WMAP_BODY_TIMEOUT": ("body_timeout", float),
    "WMAP_NAMESPACES": ("namespace", _words),
    "WMAP_LOG_FORMAT": ("log_format", str),
    "WMAP_LOG_LEVEL": ("log_level", str),
    "WMAP_GPU_RESOURCES": ("gpu_resources", _words),
    "WMAP_RESOLVER_WORKERS": ("resolver_workers", int),
    "WMAP_RESOLUTION_TIMEOUT": ("resolution_timeout", float),
    "WMAP_SHARED_GPU_RESOURCES": ("shared_gpu_resources", _words),
    "WMAP_DRA_GPU_CLASSES": ("dra_gpu_classes", _words),
    "WMAP_STALE_AFTER": ("stale_after", float),
    "WMAP_WORKLOAD_METRICS": ("workload_metrics", _flag),
    "WMAP_POD_METRICS": ("pod_metrics", _flag),
    "WMAP_GRAPHIQL": ("graphiql", _flag),
}
"""``wmap serve`` defaults read from the environment: variable -> (flag dest, parser)."""


def environment_defaults(environ: dict[str, str] | None = None) -> dict[str, object]:
    """``wmap serve`` flag defaults from ``WMAP_*`` variables (flags still override them).

    Raises:
        ValueError: a variable does not parse (e.g. ``WMAP_PORT=x``); the message names it.
    """
    env = os.environ if environ is None else environ
    out: dict[str, object] = {}
    for name, (dest, parse) in ENVIRONMENT.items():
        raw = env.get(name)
        if raw is None or raw == "":
            continue
        try:
            out[dest] = parse(raw)  # type: ignore[operator]
        except ValueError:
            raise ValueError(f"{name}={raw!r} is not valid") from None
    return out
