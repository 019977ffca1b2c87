"""Shell completion: ``wmap completion bash|zsh|fish`` and the completers behind it.

The scripts come from argcomplete (https://kislyuk.github.io/argcomplete/): the shell calls
``wmap`` back with ``_ARGCOMPLETE`` set, and :func:`autocomplete` answers from the parser
(commands, flags, ``-o`` formats) and from the completers attached here:

* workload types (``get TYPE``, ``describe TYPE``): every definition in force's kind, plural,
  ``kind.group`` and name, and the catalog aliases;
* definition names (``definitions NAME``);
* namespaces (``-n``) and workload names (the ``TYPE/NAME`` form of ``get``/``describe``; the
  separate NAME word is an optional positional that argcomplete does not reach) from the
  cluster when one is configured; each cluster call is bounded to :data:`CLUSTER_TIMEOUT_S`
  and any failure completes nothing (a completion never prints an error).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

CLUSTER_TIMEOUT_S = 3.0
SHELLS = ("bash", "zsh", "fish")


def register(sub: Any) -> None:
    """Add ``completion SHELL``."""
    c = sub.add_parser("completion", help="print the shell completion script (bash, zsh or fish)",
                       description="Load it with: source <(wmap completion bash); zsh: source <(wmap completion "
                                   "zsh); fish: wmap completion fish | source")
    c.add_argument("shell", choices=SHELLS)
    c.set_defaults(func=cmd_completion)


def cmd_completion(args: argparse.Namespace) -> int:
    """Print the script for ``args.shell``."""
    from argcomplete.shell_integration import shellcode

    print(shellcode(["wmap"], shell=args.shell), end="")
    return 0


def autocomplete(parser: argparse.ArgumentParser) -> None:
    """Answer a completion request and exit when the shell asked for one (``_ARGCOMPLETE`` set)."""
    if "_ARGCOMPLETE" not in os.environ:
        return
    import argcomplete

    attach(parser)
    argcomplete.autocomplete(parser)


def attach(parser: argparse.ArgumentParser) -> None:
    """Set the completers on the arguments of every subcommand."""
    for action in parser._actions:  # argparse keeps subparsers here; no public accessor exists
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                for arg in sub._actions:
                    _attach_one(name, arg)


def _attach_one(command: str, arg: argparse.Action) -> None:
    if arg.dest in ("kind", "target") and command in ("get", "describe"):
        arg.completer = types_completer  # type: ignore[attr-defined]
    elif arg.dest == "name" and command == "definitions":
        arg.completer = definition_names  # type: ignore[attr-defined]
    elif arg.dest == "namespace":
        arg.completer = namespaces  # type: ignore[attr-defined]


def _registry(parsed: argparse.Namespace) -> Any:
    from workload_map.cli.inputs import build_registry

    return build_registry(catalog_dir=getattr(parsed, "catalog_dir", None))


def workload_types(registry: Any) -> list[str]:
    """Every TYPE spelling ``get``/``describe`` accept, sorted."""
    out: set[str] = set()
    for entry in registry.entries():
        kind = entry.gvk.kind.lower()
        out |= {kind, kind + "s", f"{kind}.{entry.gvk.group}" if entry.gvk.group else kind, entry.definition.name}
    for entry in registry.catalog:
        out |= set(getattr(entry, "aliases", ()) or ())
    return sorted(out)


def types_completer(prefix: str, parsed_args: argparse.Namespace, **_: Any) -> list[str]:
    """TYPE, or with ``TYPE/`` typed the names of that type's workloads in the cluster."""
    if "/" in prefix:
        kind = prefix.partition("/")[0]
        return [f"{kind}/{n}" for n in _cluster_names(parsed_args, kind)]
    return [t for t in workload_types(_registry(parsed_args)) if t.startswith(prefix.lower())]


def definition_names(prefix: str, parsed_args: argparse.Namespace, **_: Any) -> list[str]:
    """Names of the definitions in force (catalog and files)."""
    return sorted(e.definition.name for e in _registry(parsed_args).entries() if e.definition.name.startswith(prefix))


def namespaces(prefix: str, parsed_args: argparse.Namespace, **_: Any) -> list[str]:
    """Namespace names from the cluster."""
    items = _cluster_list(parsed_args, "/api/v1/namespaces")
    return sorted(n for n in (str((i.get("metadata") or {}).get("name", "")) for i in items) if n.startswith(prefix))


def _cluster_names(parsed: argparse.Namespace, kind: str) -> list[str]:
    from workload_map.cli.kinds import entries_for

    entries = entries_for(_registry(parsed), kind)
    if not entries:
        return []
    return sorted({str((i.get("metadata") or {}).get("name", "")) for i in _cluster_list(parsed, None, entries[0].gvk)})


def _cluster_list(parsed: argparse.Namespace, path: str | None, gvk: Any = None) -> list[dict[str, Any]]:
    try:
        import asyncio  # here: asyncio costs ~15 ms of every command's start

        async def bounded() -> list[dict[str, Any]]:
            async with asyncio.timeout(CLUSTER_TIMEOUT_S):
                return await _list(parsed, path, gvk)

        return asyncio.run(bounded())
    except Exception:  # noqa: BLE001 - a completion never fails loudly
        return []


async def _list(parsed: argparse.Namespace, path: str | None, gvk: Any) -> list[dict[str, Any]]:
    from workload_map.kube.api import KubeApi, resource_path
    from workload_map.kube.client import connect
    from workload_map.kube.discovery import Discovery

    client = await connect(getattr(parsed, "kubeconfig", None), context=getattr(parsed, "context", None))
    try:
        api = KubeApi(client)
        if path is None:
            info = await Discovery(api).resolve(gvk)
            if info is None:
                return []
            namespace = getattr(parsed, "namespace", None) if info.namespaced else None
            path = resource_path(gvk, info.plural, namespace)
        items = (await api.get_json(path, {"limit": 500})).get("items") or []
        return [i for i in items if isinstance(i, dict)]
    finally:
        await client.close()
