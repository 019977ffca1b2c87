"""The arguments of ``wmap serve``, ``wmap get`` and the live flags of ``describe``.

Kept apart from :mod:`workload_map.cli.live` so that building the parser imports no server-side
package: an offline command (``describe -f``, ``validate``, ``catalog``, ``--version``)
never loads the informer cache, the service layer or the HTTP stack. The command
functions are looked up in :mod:`workload_map.cli.live` when one of its commands runs.
"""

from __future__ import annotations

import argparse
from typing import Any, Callable

from workload_map.definitions.phases import Phase
from workload_map.logs import FORMATS


def _live(name: str) -> Callable[[argparse.Namespace], int]:
    """``workload_map.cli.live.<name>``, imported when the command runs."""

    def run(args: argparse.Namespace) -> int:
        from workload_map.cli import live

        return int(getattr(live, name)(args))

    run.__name__ = name
    return run


def register(sub: Any) -> None:
    """Add ``serve`` and ``get`` to the ``wmap`` parser and the live flags to ``describe``."""
    s = sub.add_parser("serve", help="run the HTTP server (GraphQL, REST, health, metrics)",
                       epilog="Unset flags fall back to WMAP_HOST, WMAP_PORT, WMAP_AUTH, WMAP_IMPERSONATE, "
                              "WMAP_METRICS_PUBLIC, WMAP_REQUEST_TIMEOUT, WMAP_NAMESPACES (comma-separated), "
                              "WMAP_LOG_FORMAT, WMAP_LOG_LEVEL, WMAP_GPU_RESOURCES, WMAP_RESOLVER_WORKERS, "
                              "WMAP_RESOLUTION_TIMEOUT, WMAP_STALE_AFTER, WMAP_WORKLOAD_METRICS, WMAP_POD_METRICS and WMAP_GRAPHIQL; WMAP_GRAPHIQL_ASSETS names the local GraphiQL assets folder.")
    s.add_argument("--host", default=None, help="listen address (default 127.0.0.1)")
    s.add_argument("--port", type=int, default=None, help="listen port (default 8080)")
    s.add_argument("--snapshot", action="append", default=[],
                   help="serve objects from files or directories (repeatable; '-' for stdin)")
    s.add_argument("--kubeconfig", action="append", default=[],
                   help="kubeconfig file (repeatable: merged as $KUBECONFIG; several and no --context: one "
                        "cluster per file, its current-context)")
    s.add_argument("--context", action="append", default=[],
                   help="kubeconfig context (repeatable: one cluster per context, served together)")
    s.add_argument("--install-karta-crd", action="store_true", help="install the kartas.run.ai CRD if missing")
    s.add_argument("--karta-status", action=argparse.BooleanOptionalAction, default=True,
                   help="write Karta status from the replica holding the Lease (default on)")
    s.add_argument("--lease-namespace", default="",
                   help="namespace of that Lease (default $POD_NAMESPACE, else the service account's, else default)")
    s.add_argument("--webhook-port", type=int, default=0,
                   help="serve the Karta admission webhooks over TLS on this port (default 0: off)")
    s.add_argument("--webhook-cert", default="", help="PEM serving certificate of the webhook listener")
    s.add_argument("--webhook-key", default="", help="PEM private key of the webhook listener")
    s.add_argument("--state-dir", default=None, help="offline definition store (snapshot mode)")
    s.add_argument("--namespace", action="append", default=[], help="watch only these namespaces (repeatable)")
    s.add_argument("--cluster-name", default="", help="name reported in the GraphQL cluster field")
    s.add_argument("--stale-after", type=float, default=None,
                   help="seconds a failing list/watch may last before answers are flagged stale (default 30)")
    s.add_argument("--log-format", choices=FORMATS, default=None)
    s.add_argument("--log-level", default=None)
    s.add_argument("--auth", choices=("none", "kubernetes"), default=None,
                   help="kubernetes: callers send a bearer token (TokenReview) and see what they may list "
                        "(SubjectAccessReview); none: no checks, local use only (default none)")
    s.add_argument("--impersonate", action=argparse.BooleanOptionalAction, default=None,
                   help="with --auth kubernetes, write definitions as the caller (default on)")
    s.add_argument("--metrics-public", action=argparse.BooleanOptionalAction, default=None,
                   help="serve /metrics without authentication (default on)")
    s.add_argument("--workload-metrics", action=argparse.BooleanOptionalAction, default=None,
                   help="serve one wmap_workload_info / wmap_workload_gpus series per workload on /metrics "
                        "(default on)")
    s.add_argument("--pod-metrics", action=argparse.BooleanOptionalAction, default=None,
                   help="with --workload-metrics, also one wmap_pod_workload_info series per pod (default off)")
    s.add_argument("--graphiql", action=argparse.BooleanOptionalAction, default=None,
                   help="serve the GraphiQL page to browsers on GET /graphql (default on; --no-graphiql: JSON 404)")
    s.add_argument("--request-timeout", type=float, default=None, help="per-request time budget, seconds")
    s.add_argument("--resolver-workers", type=int, default=None,
                   help="resolver worker processes (default: the usable CPU cores)")
    s.add_argument("--resolution-timeout", type=float, default=None,
                   help="hard time budget of one workload resolution, seconds (default 2)")
    s.add_argument("--cors-origin", action="append", default=[],
                   help="a browser origin (https://portal.example.com) allowed to call this server (repeatable)")
    s.add_argument("--allowed-hosts", action="append", default=[],
                   help="Host names (comma-separated, repeatable) writes may be addressed to besides localhost, "
                        "127.0.0.1, ::1 and --host: the service names a cluster reaches this server by "
                        "(DNS rebinding protection; '*' allows any)")
    s.add_argument("--max-waits-per-client", type=int, default=None,
                   help="?wait= phase requests one client address may hold at once (default 32; 429 beyond)")
    s.add_argument("--max-definitions", type=int, default=None,
                   help="definitions this server stores at most (default 500; 429 beyond)")
    s.add_argument("--max-definitions-bytes", type=int, default=None,
                   help="total JSON size of the stored definitions, bytes (default 32 MiB; 413 beyond)")
    s.add_argument("--max-connections", type=int, default=None, help="open connections at most (default 1000)")
    s.add_argument("--max-expensive-requests", type=int, default=None,
                   help="GraphQL operations and workload lists running at once (default 8; more wait, then 503)")
    s.add_argument("--expensive-queue", type=int, default=None,
                   help="expensive requests that may wait for a slot (default 64; beyond: 503 at once)")
    s.add_argument("--header-timeout", type=float, default=None, help="seconds to send request headers (default 10)")
    s.add_argument("--body-timeout", type=float, default=None, help="seconds to send a request body (default 10)")
    s.add_argument("--graphql-max-cost", type=int, default=None,
                   help="most fields one GraphQL operation may resolve, pages multiplied by first (default 100000)")
    s.set_defaults(func=_live("cmd_serve"))
    g = sub.add_parser("get", help="list workloads of a type from a cluster or a snapshot")
    g.add_argument("kind", metavar="TYPE", help="Kind (case-insensitive), kind.group, definition name or catalog "
                                                "alias (ray, ksvc, deploy, ...: see `wmap catalog`)")
    g.add_argument("-n", "--namespace", default=None)
    g.add_argument("-A", "--all-namespaces", action="store_true")
    g.add_argument("--phase", action="append", default=[],
                   help="keep workloads in any of these phases (comma-separated, repeatable; case-insensitive: "
                        f"{', '.join(p.value for p in Phase)})")
    g.add_argument("-l", "--selector", default="",
                   help="label selector on the workload's root object (a=b,c!=d, k in (x,y), k notin (z), k, !k)")
    g.add_argument("-o", "--output", choices=("table", "wide", "name", "json", "yaml"), default=None,
                   help="default table, or $WMAP_OUTPUT / the config file")
    _source_flags(g)
    g.add_argument("--log-format", choices=FORMATS, default="text")
    g.set_defaults(func=_live("cmd_get"))
    describe_parser = sub.choices.get("describe")
    if describe_parser is not None:  # created by workload_map.cli.main with -n/--kubeconfig/--context
        describe_parser.add_argument("--snapshot", action="append", default=[],
                                     help="read objects from files or directories ('-' for stdin)")
        describe_parser.add_argument("--log-format", choices=FORMATS, default="text")


def _source_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--snapshot", action="append", default=[],
                   help="serve/read objects from files or directories (repeatable; '-' for stdin)")
    p.add_argument("--kubeconfig", default=None)
    p.add_argument("--context", default=None)
    from workload_map.cli.kubectl import add_connection_flags

    add_connection_flags(p)
