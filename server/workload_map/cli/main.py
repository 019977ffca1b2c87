"""The ``wmap`` command line.

Commands: ``describe`` (offline with ``-f``), ``validate``, ``catalog``; the server adds
``serve`` and live ``get``/``describe`` (see :mod:`workload_map.cli.live`; their flags are in
:mod:`workload_map.cli.flags`, so that building the parser imports no server-only package).

Exit codes (0-4 as upstream ``kli``): 0 success; 1 generic failure or invalid definition;
2 usage error or unreadable input; 3 workload not found; 4 no definition covers the type;
5 the cluster's API server cannot be reached; 6 ``wmap serve`` failed to start (one line
on stderr naming why); 130 (128 + SIGINT) after Ctrl-C, without a traceback; 141 (128 +
SIGPIPE, as a shell reports a process killed by it)
when the reader of the output went away (``wmap ... | head``): no traceback, the rest of
the output is dropped.

Every file argument (``-f``, ``--definition``, ``--snapshot``, ``validate FILE``) reads
standard input for ``-``; stdin is read once, so several ``-`` share the same text.
"""

from __future__ import annotations

import argparse
import atexit
import errno
import functools
import json
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from workload_map.cli.collector import resume, resume_unless_small
from workload_map.cli.inputs import (
    EXIT_BROKEN_PIPE,
    EXIT_FAIL,
    EXIT_INTERRUPTED,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    STDIN,
    build_registry,
    read_input,
    shown,
)
from workload_map.paths import default_catalog_dir
from workload_map.errors import InvalidDefinition, InvalidRequest, ServerError

if TYPE_CHECKING:
    pass

DISTRIBUTION = "workload-map-server"

def cmd_describe(args: argparse.Namespace) -> int:
    """``wmap describe -f FILE``: the workloads of the files, resolved offline.

    See :func:`workload_map.cli.describe.describe_files`; without ``-f``, from a cluster.
    """
    if not args.file:
        from workload_map.cli import live
        return live.describe(args)
    from workload_map.cli.describe import describe_files

    return describe_files(args, build_registry(args.definition, args.catalog_dir))


def validate_paths(paths: Sequence[str]) -> list[str]:
    """``paths`` with each directory replaced by its ``*.yaml``/``*.yml``/``*.json`` files (sorted, recursive)."""
    out: list[str] = []
    for path in paths:
        if path != STDIN and Path(path).is_dir():
            out += sorted(str(f) for f in Path(path).rglob("*") if f.suffix in (".yaml", ".yml", ".json") and f.is_file())
        else:
            out.append(path)
    return out


def cmd_validate(args: argparse.Namespace) -> int:
    """``wmap validate FILE|DIR...``: report every file and problem.

    Exit code: 2 when a file cannot be read or parsed or holds no document, else 1 when
    a definition is invalid, else 0.
    """
    files = validate_paths(args.files)
    if not files:
        print(f"error: no .yaml, .yml or .json file in {', '.join(args.files)}", file=sys.stderr)
        return EXIT_USAGE
    codes = [_validate_file(path, several=len(files) > 1) for path in files]
    return EXIT_USAGE if EXIT_USAGE in codes else max(codes)


def _validate_file(path: str, several: bool) -> int:
    from workload_map.definitions.extensions import extensions_of
    from workload_map.config import ResolverSettings
    from workload_map.definitions.load import check_definition, load_documents
    from workload_map.materialization.trial import check_termination_blocking

    source = shown([path])
    try:
        docs = load_documents(read_input(path), source=source)
    except InvalidRequest as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not docs:
        print(f"error: {source} holds no document", file=sys.stderr)
        return EXIT_USAGE
    status = EXIT_OK
    for doc in docs:
        definition, problems = check_definition(doc)
        if definition is not None:  # the registration trial the server runs (one verdict, one budget)
            problems = check_termination_blocking(definition, timeout=ResolverSettings().timeout_s)
            definition = None if problems else definition
        name = (doc.get("metadata") or {}).get("name", "<unnamed>") if isinstance(doc, dict) else "<unnamed>"
        if definition is not None:
            where = f" in {source}" if several else ""
            print(f"OK: {definition.name} is a valid Karta definition (GVK: {definition.gvk}){where}")
            used = extensions_of(definition).names()
            if used:
                print(f"  extensions: {', '.join(used)} (docs/definition-format.md section 12)")
            continue
        status = EXIT_FAIL
        print(f"INVALID: {name}")
        for problem in problems:
            print(f"  {problem}")
        print(f"{len(problems)} finding(s) in {source}")
    return status


def cmd_catalog(args: argparse.Namespace) -> int:
    """``wmap catalog``: the built-in definitions with GVK and operator source version."""
    from workload_map.definitions.catalog import load_catalog
    from workload_map.service.rows import catalog_row

    catalog = load_catalog(args.catalog_dir or default_catalog_dir())
    rows = [catalog_row(entry) for entry in catalog]
    if args.output == "json":
        print(json.dumps({"items": rows, "count": len(rows)}, indent=2))
        return EXIT_OK
    table = [("NAME", "GVK", "ALIASES", "SOURCE")]
    for r in rows:
        gvk = f"{r['group'] + '/' if r['group'] else ''}{r['version']}, Kind={r['kind']}"
        table.append((r["name"], gvk, ",".join(r["aliases"]), r["sourceVersion"]))
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for row in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    return EXIT_OK


def package_version() -> str:
    """The installed distribution's version (``0+unknown`` when run from an uninstalled tree)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "0+unknown"


class _Version(argparse.Action):
    """``--version``: the installed version, looked up only when asked (importlib.metadata is slow to import)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        print(f"{parser.prog} {package_version()}")  # on stdout, as argparse's own "version" action
        parser.exit()


def _prog() -> str:
    """``kubectl wmap`` when run as the kubectl plugin ``kubectl-wmap``, else ``wmap``."""
    return "kubectl wmap" if Path(sys.argv[0]).name.startswith("kubectl-wmap") else "wmap"


class _Parser(argparse.ArgumentParser):
    """argparse's parser, its help laid out at a terminal width found without :mod:`shutil`.

    argparse's help formatter imports shutil (and with it bz2 and lzma) to ask
    ``shutil.get_terminal_size()`` each time one is made, and building the parser makes
    one per argument: 1.3 ms of a one-shot ``describe -f`` (docs/engine-speed.md, "The
    one-shot CLI's start-up"). The width is worked out once, as shutil works it out
    (:func:`_terminal_columns`), less argparse's margin of 2. Subcommand parsers are of
    this class too (``add_subparsers`` makes parsers of its parser's class).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", functools.partial(argparse.HelpFormatter, width=_terminal_columns() - 2))
        super().__init__(*args, **kwargs)


@functools.cache
def _terminal_columns() -> int:
    """``shutil.get_terminal_size().columns``: ``$COLUMNS`` when a positive number, else stdout's terminal, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]  # None: below
    except (AttributeError, ValueError, OSError):  # no stdout (AttributeError of None), closed, not a terminal
        return 80


def parser() -> argparse.ArgumentParser:
    """The argument parser (subcommands register themselves here)."""
    p = _Parser(prog=_prog(), description="Workload Map: one view of every AI workload.")
    p.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    p.add_argument("--catalog-dir", default=None, help="built-in definitions directory (default: bundled catalog/)")
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("describe", help="resolve workloads from files (-f) or a cluster (KIND/NAME)")
    d.add_argument("target", nargs="?", metavar="TYPE[/NAME]", help="TYPE NAME or TYPE/NAME (live mode)")
    d.add_argument("name", nargs="?", metavar="NAME", help=argparse.SUPPRESS)
    d.add_argument("-f", "--file", action="append", default=[], help="manifest file or directory ('-' for stdin)")
    d.add_argument("--definition", action="append", default=[], help="extra Karta definition file ('-' for stdin)")
    d.add_argument("-o", "--output", choices=("json", "yaml", "tree"), default=None,
                   help="default tree, or $WMAP_OUTPUT / the config file (workload_map.cli.outputs)")
    d.add_argument("-n", "--namespace", default=None)
    d.add_argument("--kubeconfig", default=None)
    d.add_argument("--context", default=None)
    d.add_argument("--pod-limit", type=int, default=0,
                   help="pods shown per component in the tree (0: all; unhealthy pods first)")
    from workload_map.cli.kubectl import add_connection_flags

    add_connection_flags(d)
    d.set_defaults(func=cmd_describe)
    v = sub.add_parser("validate", help="validate definition files and directories ('-' for stdin)")
    v.add_argument("files", nargs="+", metavar="FILE", help="file, directory (its .yaml/.yml/.json files) or '-'")
    v.set_defaults(func=cmd_validate)
    c = sub.add_parser("catalog", help="list the built-in definitions")
    c.add_argument("-o", "--output", choices=("table", "json"), default=None)
    c.set_defaults(func=cmd_catalog)
    from workload_map.cli import completion, definitions, flags

    flags.register(sub)
    definitions.register(sub)
    completion.register(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code.

    ``EXIT_BROKEN_PIPE`` when stdout was closed early; 1 with one ``error:`` line when a write
    hit a full disk or quota (``ENOSPC``, ``EDQUOT``: the output on ``/dev/full``, a spill file).
    """
    _open_closed_streams()
    try:
        code = _run(argv)
        sys.stdout.flush()  # a closed pipe must fail here, not in the interpreter's final flush
        return code
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        _silence_stdout()  # the output (or a spill file) hit a full disk: one line, no traceback
        print(f"error: cannot write: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_FAIL


def run() -> NoReturn:
    """:func:`main`, then exit (called by the console entry, :func:`workload_map.cli.entry.run`).

    Leaves with ``os._exit`` once the output is flushed and the ``atexit`` handlers have run
    (logging's, the multiprocessing pool's, the removal of a saved stdin): the interpreter's
    own teardown (clearing every module and freeing every object one by one) has nothing
    left to do that anyone could see, and took about 19 ms of a 150 ms ``wmap describe -f``
    (docs/engine-speed.md). Ctrl-C (``KeyboardInterrupt``, also re-raised by uvicorn after
    ``wmap serve`` shut down on SIGINT) is exit 130 without a traceback; SIGTERM ends a
    command through ``SystemExit`` (exit 143), so the ``atexit`` handlers still run (a stdin
    saved to a temporary file is removed); any other exception out of :func:`main` takes the
    normal way out.
    """
    signal.signal(signal.SIGTERM, _terminated)  # wmap serve's own handler replaces this one
    try:
        code = main()
    except KeyboardInterrupt:
        code = EXIT_INTERRUPTED
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (main() answered EXIT_BROKEN_PIPE) or a closed stream
            pass
    atexit._run_exitfuncs()
    os._exit(code)


def _open_closed_streams() -> None:
    """Point a standard stream the process started without (``>&-``: Python's ``sys.stdout`` is None) at /dev/null.

    What it would have shown goes nowhere, as the caller asked; every writer (``print``,
    the renderers' ``sys.stdout.write``, the final flush) works as usual.
    """
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))  # open while the process lives


def _terminated(signum: int, frame: object) -> NoReturn:
    """SIGTERM: leave through ``SystemExit`` (128 + the signal, as a shell reports it), not at once."""
    raise SystemExit(128 + signum)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again.

    The recipe of the Python ``signal`` documentation ("Note on SIGPIPE").
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout without a file descriptor (tests)
        pass


def _run(argv: Sequence[str] | None) -> int:
    from workload_map.cli.failures import fail

    from workload_map.cli.outputs import OUTPUTS, default_output

    from workload_map.cli.completion import autocomplete

    p = parser()
    autocomplete(p)  # answers and exits when the shell is completing
    args = p.parse_args(argv)
    try:
        if args.command in OUTPUTS and getattr(args, "output", None) is None:
            args.output = default_output(args.command)
    except InvalidRequest as exc:
        return fail("usage", str(exc), EXIT_USAGE)
    output = getattr(args, "output", None)
    if args.func is cmd_describe and args.file:
        resume_unless_small(args.file)  # the one command that may run to its end without the collector
    else:
        resume()
    try:
        return int(args.func(args))
    except InvalidDefinition as exc:
        if output in ("json", "yaml"):
            return fail("invalid_definition", str(exc), EXIT_FAIL, output=output,
                        extra={"problems": [p.to_dict() for p in exc.problems]})
        print(f"error: {exc.name or 'definition'} is invalid:", file=sys.stderr)
        for problem in exc.problems:
            print(f"  {problem}", file=sys.stderr)
        return EXIT_FAIL
    except InvalidRequest as exc:
        return fail("usage", str(exc), EXIT_USAGE, output=output)
    except ServerError as exc:
        if exc.code == "cluster_unreachable":
            return fail("cluster_unreachable", str(exc), EXIT_UNREACHABLE, output=output)
        if exc.code == "workload_not_found":
            return fail("workload_not_found", str(exc), EXIT_NOT_FOUND, output=output)
        return fail("failed", str(exc), EXIT_FAIL, output=output)


if __name__ == "__main__":
    raise SystemExit(main())
