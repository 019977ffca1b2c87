"""``wmap serve``, and ``wmap get`` / ``wmap describe KIND/NAME`` against a cluster or snapshot.

``get`` and ``describe`` read a cluster (kubeconfig chosen as kubectl does: ``--kubeconfig``,
``$KUBECONFIG``, ``~/.kube/config``, in-cluster) through a short-lived informer cache
watching only the kinds they need (plus pods and Kartas, whose definitions are merged
over the catalog), or ``--snapshot PATH`` files (``-`` for stdin). Exit codes follow
``workload_map.cli.main``: 2 usage (an unknown ``--phase`` or ``-l`` too), 3 not found, 4 no
definition covers the type, 5 the API server does not answer (checked before any list,
``workload_map.cli.kubectl.connect_reachable``), 6 ``serve`` did not start. Without ``-n``, a
cluster is read in the kubeconfig context's namespace (else ``default``) and files in
every namespace, by ``get`` and ``describe`` alike (``default_namespace_of``).

The TYPE of ``get`` (and the KIND of ``describe KIND/NAME``) is a kind (case-insensitive,
optionally plural), ``kind.group``, a definition name, or a catalog alias (``ray``,
``ksvc``, ``deploy``: ``wmap catalog`` lists them); an alias names a group/kind, served by
whichever definition is in force for it (a registered one wins over the catalog).

Top-level rule, the same as the server's (``WorkloadService.is_top_level``): an object is a
workload of its own unless a controller owner up its chain (``controller: true``
ownerReferences, https://kubernetes.io/docs/concepts/overview/working-with-objects/owners-dependents/)
exists and is a kind some definition covers. The server watches every kind of every
definition in force, so it sees those owners; the CLI watches only the requested type's
kinds at first, then the kinds that the listed objects' controller ownerReferences name
(``apiVersion``/``kind``, mapped to the version the definitions watch), round by round up
the chain (at most ``MAX_OWNER_DEPTH`` rounds). An owner whose kind cannot be read
(``forbidden``, ``crd_missing``) is reported on stderr with the objects it leaves
undecided; those are listed, as the server lists them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, cast

from workload_map.logs import printable
from workload_map.cli.kinds import resolve_kind
from workload_map.cli.serving import StartupFailure, drained_first
from workload_map.cli.inputs import (
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_SERVE_FAILED,
    EXIT_USAGE,
    build_registry,
    offline_service,
    snapshot_paths,
    snapshot_reader,
)
from workload_map.config import (
    DEFAULT_GRAPHQL_MAX_COST,
    AuthSettings,
    HttpSettings,
    KubeSettings,
    ResolverSettings,
    Settings,
    WebhookSettings,
    environment_defaults,
)
from workload_map.definitions.phases import Phase
from workload_map.definitions.registry import DefinitionRegistry, Entry
from workload_map.errors import InvalidRequest
from workload_map.gvk import KARTA_GVK, POD_GVK
from workload_map.kube.reader import InformerStatus, Reader
from workload_map.logs import FORMATS, configure_logging
from workload_map.resolution.dra import DRA_KINDS
from workload_map.registration.registrar import Registrar
from workload_map.registration.stores import DirectoryStore

SYNC_TIMEOUT_S = 30.0
REQUEST_TIMEOUT_S = 30.0


def _pick(args: argparse.Namespace, env: dict[str, Any], name: str, default: Any) -> Any:
    """The flag when given, else the ``WMAP_*`` environment value, else ``default``."""
    value = getattr(args, name, None)
    if value is not None and value != []:
        return value
    return env.get(name, default)


def _listed(value: Any) -> tuple[str, ...]:
    """A repeatable flag's values (a single string, as older callers pass, counts as one)."""
    if not value:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def _hosts(values: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """``--allowed-hosts`` values split at commas, lowercased."""
    return tuple(h.strip().lower() for value in values for h in value.split(",") if h.strip())


def serve_settings(args: argparse.Namespace, environ: dict[str, str] | None = None) -> Settings:
    """Settings for ``wmap serve`` from flags over ``WMAP_*`` variables over defaults.

    Raises:
        InvalidRequest: a ``WMAP_*`` variable does not parse.
    """
    try:
        env = environment_defaults(environ)
    except ValueError as exc:
        raise InvalidRequest(str(exc)) from None
    http = HttpSettings(host=_pick(args, env, "host", "127.0.0.1"), port=_pick(args, env, "port", 8080),
                        request_timeout_s=_pick(args, env, "request_timeout", REQUEST_TIMEOUT_S),
                        graphql_max_cost=_pick(args, env, "graphql_max_cost", DEFAULT_GRAPHQL_MAX_COST),
                        cors_origins=tuple(_pick(args, env, "cors_origin", ())),
                        allowed_hosts=_hosts(_pick(args, env, "allowed_hosts", ())),
                        max_waits_per_client=_pick(args, env, "max_waits_per_client", 32),
                        max_definitions=_pick(args, env, "max_definitions", 500),
                        max_definitions_bytes=_pick(args, env, "max_definitions_bytes", 32 * 1024 * 1024),
                        max_connections=_pick(args, env, "max_connections", 1000),
                        max_expensive=_pick(args, env, "max_expensive_requests", 8),
                        expensive_queue=_pick(args, env, "expensive_queue", 64),
                        header_timeout_s=_pick(args, env, "header_timeout", 10.0),
                        body_timeout_s=_pick(args, env, "body_timeout", 10.0))
    auth = AuthSettings(mode=_pick(args, env, "auth", "none"), impersonate=_pick(args, env, "impersonate", True))
    kubeconfigs, contexts = _listed(args.kubeconfig), _listed(args.context)
    settings = Settings(
        http=http, auth=auth,
        kube=KubeSettings(kubeconfig=os.pathsep.join(kubeconfigs) or None,
                          context=contexts[0] if len(contexts) == 1 else None,
                          kubeconfigs=kubeconfigs, contexts=contexts,
                          namespaces=tuple(_pick(args, env, "namespace", ())), snapshot=snapshot_paths(args.snapshot),
                          install_karta_crd=args.install_karta_crd, cluster_name=args.cluster_name,
                          stale_after_s=_pick(args, env, "stale_after", 30.0),
                          karta_status=getattr(args, "karta_status", True),
                          lease_namespace=getattr(args, "lease_namespace", "")),
        webhook=WebhookSettings(port=getattr(args, "webhook_port", 0), cert_file=getattr(args, "webhook_cert", ""),
                                key_file=getattr(args, "webhook_key", "")),
        log_format=_pick(args, env, "log_format", "text"), log_level=_pick(args, env, "log_level", "INFO"),
        gpu_resources=tuple(cast("tuple[str, ...]", env.get("gpu_resources", ()))),
        shared_gpu_resources=tuple(cast("tuple[str, ...]", env.get("shared_gpu_resources", ()))),
        dra_gpu_classes=cast("tuple[str, ...] | None", env.get("dra_gpu_classes")),
        metrics_public=_pick(args, env, "metrics_public", True),
        workload_metrics=_pick(args, env, "workload_metrics", True),
        pod_metrics=_pick(args, env, "pod_metrics", False),
        graphiql=_pick(args, env, "graphiql", True),
        resolver=ResolverSettings(workers=_pick(args, env, "resolver_workers", 0),
                                  timeout_s=_pick(args, env, "resolution_timeout", 2.0)))
    several = len(contexts) > 1 or (len(kubeconfigs) > 1 and not contexts)
    if several and auth.mode == "kubernetes":
        raise InvalidRequest("--auth kubernetes checks callers against one API server: serve several clusters "
                             "(several --context or --kubeconfig) with --auth none for now")
    if settings.resolver.workers < 0 or settings.resolver.timeout_s <= 0:
        raise InvalidRequest("--resolver-workers must be >= 0 (0: one per CPU core) and --resolution-timeout > 0")
    if auth.mode not in ("none", "kubernetes"):
        raise InvalidRequest(f"WMAP_AUTH must be none or kubernetes, got {auth.mode!r}")
    if not settings.kube.stale_after_s >= 0:
        raise InvalidRequest(f"--stale-after (WMAP_STALE_AFTER) must be a number of seconds >= 0, "
                             f"got {settings.kube.stale_after_s!r}")
    if settings.webhook.port and not (settings.webhook.cert_file and settings.webhook.key_file):
        raise InvalidRequest("--webhook-port needs --webhook-cert and --webhook-key (the API server calls "
                             "admission webhooks over TLS only)")
    if settings.log_format not in FORMATS:
        raise InvalidRequest(f"WMAP_LOG_FORMAT must be one of {', '.join(FORMATS)}, got {settings.log_format!r}")
    if args.catalog_dir:
        settings.catalog_dir = Path(args.catalog_dir)
    if args.state_dir:
        settings.state_dir = Path(args.state_dir)
    return settings


def cmd_serve(args: argparse.Namespace) -> int:
    """``wmap serve``: build the app and run uvicorn until interrupted."""
    import uvicorn

    from workload_map.app import create_app, has_cluster, uvicorn_limits

    settings = serve_settings(args)
    if settings.auth.mode == "kubernetes" and (settings.kube.snapshot or not has_cluster(settings)):
        print("error: --auth kubernetes needs a cluster (callers are checked by its API server); "
              "serve snapshots with --auth none", file=sys.stderr)
        return EXIT_USAGE
    busy = port_problem(settings.http.host, settings.http.port)
    if busy:  # before any loading or resolution: a port in use is known at once
        print(f"error: wmap serve did not start: {busy}", file=sys.stderr)
        return EXIT_SERVE_FAILED
    configure_logging(settings.log_format, settings.log_level)
    inner = create_app(settings)
    app = StartupFailure(inner)
    config = uvicorn.Config(app, host=settings.http.host, port=settings.http.port, log_config=None, lifespan="on",
                            ws="websockets-sansio", timeout_graceful_shutdown=5, proxy_headers=False,
                            ws_max_size=settings.http.max_body_bytes, **uvicorn_limits(settings))
    server = drained_first(uvicorn.Server(config), inner.state.runtime.drain)

    def stop_serving(error: str) -> None:  # a snapshot found unreadable after the start (read off the loop)
        app.error, server.should_exit = error, True

    inner.state.runtime.on_startup_failure = stop_serving
    hook = settings.webhook
    try:
        if hook.port:
            from workload_map.app import webhook_app
            from workload_map.cli.serving import run_with_webhook

            run_with_webhook(server, uvicorn.Server(uvicorn.Config(
                webhook_app(inner), host=settings.http.host, port=hook.port, log_config=None,
                lifespan="off", ssl_certfile=hook.cert_file, ssl_keyfile=hook.key_file, timeout_graceful_shutdown=5)))
        else:
            server.run()
    except SystemExit:  # uvicorn exits 1 when it cannot bind the address (it logged why)
        if server.started:
            raise
    if not server.started or inner.state.runtime.startup_error:
        reason = app.error or f"cannot listen on {settings.http.host}:{settings.http.port}"
        print(f"error: wmap serve did not start: {printable(reason)}", file=sys.stderr)
        return EXIT_SERVE_FAILED
    return EXIT_OK


def port_problem(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be listened on (bound and released at once, as uvicorn binds), or None."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as exc:
        return f"cannot listen on {host}:{port}: {exc}"
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            return f"cannot listen on {host}:{port}: {exc.strerror or exc}"
    return None


async def _read(args: argparse.Namespace, registry: DefinitionRegistry, kinds: list[Entry],
                namespace: str | None) -> tuple[Reader, Any]:
    """A synced reader for ``kinds`` (snapshot or a started cache); returns it and a closer."""
    if args.snapshot:
        reader = snapshot_reader(args.snapshot)
        _merge_kartas(registry, reader)
        return reader, None
    from workload_map.cli.kubectl import connect_reachable
    from workload_map.kube.cache import CacheOptions, InformerCache

    client = await connect_reachable(args.kubeconfig, args.context, args=args)
    cache = InformerCache(client, options=CacheOptions(namespaces=(namespace,) if namespace else ()),
                          close_client=True)
    for gvk in {g for e in kinds for g in e.definition.kinds()} | {POD_GVK, KARTA_GVK, *DRA_KINDS}:
        cache.watch(gvk)
    await cache.start()
    if not await cache.wait_synced(SYNC_TIMEOUT_S):
        print(f"warning: caches not synced after {SYNC_TIMEOUT_S:g}s; results may be incomplete", file=sys.stderr)
    _merge_kartas(registry, cache)
    from workload_map.cli.owners import report_unreadable_owners, watch_owner_kinds

    await watch_owner_kinds(cache, registry, timeout=SYNC_TIMEOUT_S)
    report_unreadable_owners(cache, registry)
    for line in unread_kind_warnings(cache.states().values()):
        print(line, file=sys.stderr)
    return cache, cache.stop


def unread_kind_warnings(states: Iterable[InformerStatus]) -> list[str]:
    """``warning:`` lines for the kinds the cache could not read, each naming its version.

    A version the cluster does not serve is no warning while another version of the same
    kind is read (the catalog covers, e.g., DynamoGraphDeployment v1alpha1 and v1beta1; a
    cluster serves one of them).
    """
    states = list(states)
    read = {s.gvk.group_kind for s in states if s.state not in ("crd_missing", "forbidden")}
    return [f"warning: {s.gvk.kind}.{s.gvk.group or 'core'} {s.gvk.version}: {s.state}" for s in states
            if s.state == "forbidden" or (s.state == "crd_missing" and s.gvk.group_kind not in read)]


def _merge_kartas(registry: DefinitionRegistry, reader: Reader) -> None:
    """Cluster Karta definitions over the catalog; invalid ones reported as warnings."""
    registrar = Registrar(registry, DirectoryStore("/nonexistent"), trial_timeout=0)
    for obj in reader.list(KARTA_GVK):
        registrar.apply_karta("ADDED", obj)
    for skipped in registrar.skipped.values():
        print(f'warning: skipping Karta definition "{skipped.key}": '
              + "; ".join(str(p) for p in skipped.problems), file=sys.stderr)


def _cluster_of(args: argparse.Namespace) -> str:
    """The cluster name ``wmap get`` stamps on views: the kubeconfig context ("" over files)."""
    if getattr(args, "snapshot", None):
        return ""
    from workload_map.cli.kubectl import context_name

    return context_name(args.kubeconfig, args.context)


def cmd_get(args: argparse.Namespace) -> int:
    """``wmap get KIND``: list top-level workloads of a type."""
    configure_logging(args.log_format, "WARNING")
    return asyncio.run(_get(args))


def parse_phases(values: list[str]) -> set[str]:
    """``--phase`` values (comma-separated, repeatable) as lowercase phase names.

    Raises:
        InvalidRequest: a name that is not a phase (the message lists the valid ones).
    """
    valid = {p.value.lower(): p for p in Phase}
    wanted = {p.strip().lower() for value in values for p in value.split(",") if p.strip()}
    unknown = sorted(wanted - set(valid))
    if unknown:
        raise InvalidRequest(f"unknown phase {', '.join(repr(u) for u in unknown)} in --phase; valid phases "
                             f"(case-insensitive): {', '.join(p.value for p in Phase)}")
    return wanted


async def _get(args: argparse.Namespace) -> int:
    phases = parse_phases(args.phase)
    registry = build_registry(catalog_dir=args.catalog_dir)
    entries = resolve_kind(registry, args.kind, output=args.output)
    if isinstance(entries, int):
        return entries
    from workload_map.cli.kubectl import matches, parse_selector
    from workload_map.cli.render import render_list

    selector = parse_selector(args.selector)
    if args.all_namespaces and args.namespace:
        raise InvalidRequest("--namespace and --all-namespaces are exclusive")
    namespace = None if args.all_namespaces else default_namespace_of(args)
    reader, close = await _read(args, registry, entries, namespace)
    try:
        group_kind = entries[0].gvk.group_kind
        views = [v for v in offline_service(registry, reader, cluster=_cluster_of(args)).workloads(
                     namespace=namespace, kind=group_kind[1], group=group_kind[0])
                 if (not phases or any(p.value.lower() in phases for p in v.phases))
                 and matches(selector, ((reader.by_uid(v.uid) or {}).get("metadata") or {}).get("labels"))]
    finally:
        if close is not None:
            await close()
    views.sort(key=lambda v: (v.namespace or "", v.name))  # kubectl's order: namespace, then name
    if views or args.output in ("json", "yaml"):
        print(render_list(views, args.output))
    else:
        where = f"namespace {namespace}" if namespace else "any namespace"
        print(f"No workloads found in {where}.", file=sys.stderr)
    return EXIT_OK


def default_namespace_of(args: argparse.Namespace) -> str | None:
    """The namespace of ``get``/``describe`` (``None``: all namespaces).

    ``-n``; else all namespaces for files (``--snapshot``, ``-f``); else the kubeconfig
    context's namespace or ``default`` (``workload_map.cli.kubectl.default_namespace``), as kubectl.
    """
    from workload_map.cli.kubectl import default_namespace

    if args.namespace:
        return str(args.namespace)
    if getattr(args, "snapshot", None) or getattr(args, "file", None):
        return None
    return default_namespace(args.kubeconfig, args.context)


def describe(args: argparse.Namespace) -> int:
    """``wmap describe TYPE NAME`` (or ``TYPE/NAME``) against a cluster or ``--snapshot``."""
    configure_logging(getattr(args, "log_format", "text"), "WARNING")
    if args.target and getattr(args, "name", None):
        if "/" in args.target:
            print(f"error: give TYPE NAME or TYPE/NAME, not {args.target} {args.name}", file=sys.stderr)
            return EXIT_USAGE
        args.target = f"{args.target}/{args.name}"
    if not args.target or "/" not in args.target:
        print("error: a NAME is required: give TYPE NAME or TYPE/NAME (or use -f FILE)", file=sys.stderr)
        return EXIT_USAGE
    return asyncio.run(_describe(args))


async def _describe(args: argparse.Namespace) -> int:
    from workload_map.cli.render import render

    kind, _, name = args.target.partition("/")
    if not kind or not name or "/" in name:
        print(f"error: expected KIND/NAME, got {args.target!r}", file=sys.stderr)
        return EXIT_USAGE
    registry = build_registry(args.definition, args.catalog_dir)
    entries = resolve_kind(registry, kind, output=args.output)
    if isinstance(entries, int):
        return entries
    snapshot = getattr(args, "snapshot", [])
    args.snapshot = snapshot
    namespace = default_namespace_of(args)
    reader, close = await _read(args, registry, entries, namespace)
    try:
        gvk = entries[0].gvk
        service = offline_service(registry, reader)
        if namespace is not None:
            view = service.workload(namespace, gvk.group, gvk.kind, name)
        else:  # files without -n: the one workload of that name in any namespace
            found = [v for v in service.workloads(kind=gvk.kind, group=gvk.group) if v.name == name]
            if len(found) != 1:
                where = ", ".join(sorted(v.namespace or "<none>" for v in found))
                print(f'error: {len(found) or "no"} {gvk.kind} named "{name}" in the files'
                      + (f" (namespaces {where}): give -n" if found else ""), file=sys.stderr)
                return EXIT_USAGE if found else EXIT_NOT_FOUND
            view = found[0]
    finally:
        if close is not None:
            await close()
    print(render([view], args.output, pod_limit=getattr(args, "pod_limit", 0)))
    return EXIT_OK
