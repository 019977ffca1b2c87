"""``wmap definitions [NAME]``: the Karta definitions in force, or one of them.

The catalog, ``--definition`` files and, when a cluster is configured (``--kubeconfig``,
``--context``, ``$KUBECONFIG``, ``~/.kube/config`` or in-cluster; not with ``--offline``),
the cluster's Karta objects, merged as the server merges them: one definition per root GVK,
a registered one over the built-in one. Filters as upstream ``kli definitions``: ``--group``,
``--kind`` (needs ``--group``), ``--version`` (needs ``--kind``).

Output: a table ``NAME KIND ORIGIN COMPONENTS`` (``root, c1, c2, +N more`` past
``--component-limit``), sorted by name; ``-o json`` ``{"items": [Karta...]}``; with NAME the
one Karta manifest (``-o yaml`` pipes into ``wmap validate -``). Errors follow
:mod:`workload_map.cli.failures` (``definition_not_found`` exit 3, ``no_definition_for_type``
exit 4, ``usage`` exit 2).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from workload_map.cli.failures import fail
from workload_map.cli.inputs import EXIT_NO_DEFINITION, EXIT_NOT_FOUND, EXIT_OK, EXIT_USAGE, build_registry

if TYPE_CHECKING:  # the registry pulls the catalog and jq: only when the command runs
    from workload_map.definitions.registry import DefinitionRegistry, Entry

KARTAS_PATH = "/apis/run.ai/v1alpha1/kartas"


def register(sub: Any) -> None:
    """Add ``definitions`` to the ``wmap`` parser."""
    d = sub.add_parser("definitions", help="list the Karta definitions in force (catalog, files, cluster)")
    d.add_argument("name", nargs="?", metavar="NAME", help="print this one definition")
    d.add_argument("--group", default=None, help="only definitions of this API group ('' for core)")
    d.add_argument("--kind", default=None, help="only this Kind (case-insensitive; needs --group)")
    d.add_argument("--version", dest="api_version", default=None, help="only this version (needs --kind)")
    d.add_argument("--component-limit", type=int, default=3, help="components named in the table (0: all)")
    d.add_argument("--definition", action="append", default=[], help="extra Karta definition file ('-' for stdin)")
    d.add_argument("--offline", action="store_true", help="do not read Kartas from a cluster")
    d.add_argument("-o", "--output", choices=("table", "json", "yaml"), default=None)
    d.add_argument("--kubeconfig", default=None)
    d.add_argument("--context", default=None)
    from workload_map.cli.kubectl import add_connection_flags

    add_connection_flags(d)
    d.set_defaults(func=cmd_definitions)


def cmd_definitions(args: argparse.Namespace) -> int:
    """Run ``wmap definitions``; returns the exit code."""
    output = args.output or "table"  # main sets the default from $WMAP_OUTPUT / the config file
    if args.kind and args.group is None:
        return fail("usage", "--kind needs --group (use --group '' for the core group)", EXIT_USAGE, output=output)
    if args.api_version and not args.kind:
        return fail("usage", "--version needs --kind", EXIT_USAGE, output=output)
    registry = build_registry(args.definition, args.catalog_dir)
    if not args.offline and _has_cluster(args):
        import asyncio

        asyncio.run(_merge_cluster(registry, args))
    entries = [e for e in registry.entries() if _wanted(e, args)]
    if args.name:
        found = next((e for e in entries if e.definition.name == args.name), None)
        if found is None:
            return fail("definition_not_found", f'no Karta definition named "{args.name}"', EXIT_NOT_FOUND,
                        output=output, extra={"name": args.name}, hint="`wmap definitions` lists them")
        print(_dump(found.definition.manifest, "yaml" if output == "table" else output))
        return EXIT_OK
    if not entries and (args.group is not None or args.kind):
        wanted = "/".join(x for x in (args.group, args.api_version, args.kind) if x)
        return fail("no_definition_for_type", f'no Karta definition covers "{wanted or "core"}"', EXIT_NO_DEFINITION,
                    output=output, extra={"type": wanted})
    if output == "table":
        print(_table(entries, args.component_limit) if entries else "", end="")
        if not entries:
            print("No Karta definitions found.", file=sys.stderr)
        return EXIT_OK
    print(_dump({"items": [e.definition.manifest for e in entries]}, output))
    return EXIT_OK


def _wanted(entry: Entry, args: argparse.Namespace) -> bool:
    gvk = entry.gvk
    return ((args.group is None or gvk.group == args.group) and (not args.kind or gvk.kind.lower() == args.kind.lower())
            and (not args.api_version or gvk.version == args.api_version))


def _dump(document: Any, output: str) -> str:
    if output == "yaml":
        import yaml

        return str(yaml.safe_dump(document, sort_keys=False)).rstrip("\n")
    return json.dumps(document, indent=2)


def _components(entry: Entry, limit: int) -> str:
    names = [c.name for c in entry.definition.components]
    if limit > 0 and len(names) > limit + 1:
        return ", ".join(names[:limit + 1]) + f", +{len(names) - limit - 1} more"
    return ", ".join(names)


def _table(entries: list[Entry], limit: int) -> str:
    rows = [("NAME", "KIND", "ORIGIN", "COMPONENTS")]
    rows += [(e.definition.name, f"{e.gvk.kind}.{e.gvk.group or 'core'}", e.origin, _components(e, limit))
             for e in sorted(entries, key=lambda e: e.definition.name)]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return "".join("   ".join([*(c.ljust(w) for c, w in zip(r[:3], widths)), r[3]]).rstrip() + "\n" for r in rows)


def _has_cluster(args: argparse.Namespace) -> bool:
    if args.kubeconfig or args.context or args.server:
        return True
    from workload_map.kube.client import has_cluster_config

    return bool(has_cluster_config())


async def _merge_cluster(registry: DefinitionRegistry, args: argparse.Namespace) -> None:
    """Register the cluster's Karta objects (origin ``cluster``); a missing CRD or no permission warns."""
    from workload_map.cli.kubectl import connect_reachable
    from workload_map.kube.api import KubeApi
    from workload_map.kube.errors import KubeApiError
    from workload_map.registration.registrar import Registrar
    from workload_map.registration.stores import DirectoryStore

    client = await connect_reachable(args.kubeconfig, args.context, args=args)
    try:
        listed = await KubeApi(client).get_json(KARTAS_PATH)
    except KubeApiError as exc:
        reason = "the kartas.run.ai CRD is not installed" if exc.is_not_found else (
            "not allowed to list kartas" if exc.is_forbidden else str(exc))
        print(f"warning: cluster definitions not read: {reason}", file=sys.stderr)
        return
    finally:
        await client.close()
    intake = Registrar(registry, DirectoryStore("/nonexistent"), trial_timeout=0)
    for obj in listed.get("items") or []:
        intake.apply_karta("ADDED", obj)
    for skipped in intake.skipped.values():
        print(f'warning: skipping Karta definition "{skipped.key}": '
              + "; ".join(str(p) for p in skipped.problems), file=sys.stderr)
