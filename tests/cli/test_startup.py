"""Start-up of the offline CLI (issue 16 item 5): what it imports, what it compiles, how it resolves.

Speed itself is measured by ``python -m benchmarks.startup`` (printed figures, no timed
test); these tests pin the causes: offline commands import no server-only package, the
catalog compiles only the kinds an input holds, and resolution runs in a plain ``fork``
child with the server's budget and timeout error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from workload_map.cli.inputs import build_registry, offline_service, snapshot_reader
from workload_map.paths import REPO_ROOT, default_catalog_dir
from workload_map.definitions.catalog import load_catalog
from workload_map.errors import DefinitionError
from workload_map.gvk import GVK
from workload_map.materialization.pool import BlockingResolver
from tests.service.support import LOOP_PATH, demo, demo_definition

JOBSET_FILE = REPO_ROOT / "tests" / "fixtures" / "objects" / "jobset-x-k8s-io-jobset-v1alpha2" / "running.yaml"
SERVER_ONLY = ("kubernetes_asyncio", "aiohttp", "strawberry", "graphql", "starlette", "uvicorn",
               "prometheus_client", "httpx", "websockets")

# Runs one CLI command in a fresh interpreter, in process, and prints the exit code and the
# server-only packages found in sys.modules afterwards.
PROBE = """
import contextlib, io, sys
from workload_map.cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        code = main(sys.argv[1:])
    except SystemExit as exc:
        code = exc.code
loaded = [name for name in {names!r} if name in sys.modules]
print(code, ",".join(loaded))
"""


@pytest.mark.parametrize("argv", [
    ["describe", "-f", str(JOBSET_FILE)],
    ["describe", "-f", str(JOBSET_FILE), "-o", "json"],
    ["get", "jobset", "--snapshot", str(JOBSET_FILE)],
    ["describe", "jobset", "llm-pretrain", "--snapshot", str(JOBSET_FILE)],
    ["catalog"],
    ["validate", str(REPO_ROOT / "catalog")],
    ["--version"],
], ids=lambda argv: " ".join(a if "/" not in a else Path(a).name for a in argv))
def test_an_offline_command_imports_no_server_only_package(argv: list[str]) -> None:
    probe = PROBE.format(names=SERVER_ONLY)
    done = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, timeout=120,
                          cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    code, loaded = done.stdout.split()[0], done.stdout.strip().partition(" ")[2]
    assert (code, loaded) == ("0", "")


# what `describe -f` of a file whose definitions are all bounded (resolved in process, no
# worker) must leave out: the server's event loop and the worker pool's process machinery
OFFLINE_UNUSED = ("asyncio", "multiprocessing", "multiprocessing.connection", "concurrent.futures", "ssl",
                  "socket", "subprocess", "selectors", "ctypes", "resource", "workload_map.materialization.pool")


@pytest.mark.parametrize("output", ["tree", "json", "yaml"])
def test_describe_f_in_process_imports_no_event_loop_or_process_pool(output: str) -> None:
    probe = PROBE.format(names=SERVER_ONLY + OFFLINE_UNUSED)
    done = subprocess.run([sys.executable, "-c", probe, "describe", "-f", str(JOBSET_FILE), "-o", output],
                          capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split(" ", 1) == ["0", "\n"]  # exit code 0 and none of them loaded


def test_the_catalog_loads_with_the_jq_rule_deferred_and_checks_only_the_kinds_asked() -> None:
    catalog = load_catalog(default_catalog_dir(), defer_jq=True)
    assert len(catalog.unchecked) == len(catalog) == 35  # every entry waits for its jq rule
    catalog.check({("jobset.x-k8s.io", "JobSet")})
    assert GVK("jobset.x-k8s.io", "v1alpha2", "JobSet") not in catalog.unchecked
    assert len(catalog.unchecked) == 34
    assert len(load_catalog(default_catalog_dir()).unchecked) == 0  # the default: fully checked at load


def test_describe_compiles_the_kinds_of_its_input_only() -> None:
    registry = build_registry()
    reader = snapshot_reader([str(JOBSET_FILE)])
    offline_service(registry, reader)
    # the fixture holds a JobSet, its Jobs and their Pods: those three entries are checked,
    # the other 32 wait
    checked = {g.kind for g in set(e.gvk for e in registry.catalog) - registry.catalog.unchecked}
    assert checked == {"JobSet", "Job", "Pod"}
    assert len(registry.catalog.unchecked) == 32


def test_describe_f_builds_only_the_catalog_entries_of_its_input_kinds(capsys: pytest.CaptureFixture[str]) -> None:
    from workload_map.cli.describe import describe_files
    from workload_map.cli.main import parser

    registry = build_registry()
    args = parser().parse_args(["describe", "-f", str(JOBSET_FILE), "-o", "json"])
    assert describe_files(args, registry) == 0
    shown = json.loads(capsys.readouterr().out)
    # one view (an object, not a list): Jobs leader x1 and worker x2, one pod each, 4 GPUs per
    # pod: 12 by spec; the three pods run on nodes, so 12 allocated
    assert (shown["kind"], shown["name"], shown["gpu"]["requestedBySpec"], shown["gpu"]["allocated"]) == \
        ("JobSet", "llm-pretrain", 12, 12)
    # the fixture holds a JobSet, its Jobs and their Pods: the other 32 entries were never built
    assert sorted(e.gvk.kind for e in registry.catalog) == ["Job", "JobSet", "Pod"]


def test_describe_f_keeps_the_definitions_of_the_kinds_its_input_nests(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    # a queued AppWrapper alone: its PyTorchJob is not created yet, so its would-be child is
    # resolved through the PyTorchJob definition (nested-templates), a kind the input lacks:
    # master x1 + worker x2, 2 GPUs each = 6 by spec (0 when narrowing dropped that entry)
    from workload_map.cli.describe import describe_files
    from workload_map.cli.main import parser

    sample = REPO_ROOT / "server" / "workload_map" / "sample" / "workload-codeflare-dev-appwrapper-v1beta2.yaml"
    (queued,) = [d for d in yaml.safe_load_all(sample.read_text()) if d and d["metadata"]["name"] == "fms-tune-queued"]
    path = tmp_path / "queued.yaml"
    path.write_text(yaml.safe_dump(queued))
    registry = build_registry()
    assert describe_files(parser().parse_args(["describe", "-f", str(path), "-o", "json"]), registry) == 0
    view = json.loads(capsys.readouterr().out)
    assert (view["kind"], view["gpu"]["requestedBySpec"]) == ("AppWrapper", 6)
    # the AppWrapper entry and the eight kinds it nests (its workload-map.run.ai/nested annotation)
    assert sorted(e.gvk.kind for e in registry.catalog) == [
        "AppWrapper", "Deployment", "Job", "JobSet", "LeaderWorkerSet", "PyTorchJob", "RayCluster", "RayJob",
        "StatefulSet"]


def test_a_deferred_catalog_builds_an_entry_on_first_use_and_reports_a_broken_one_then(tmp_path: Path) -> None:
    jobset = yaml.safe_load((default_catalog_dir() / "jobset-x-k8s-io-jobset-v1alpha2.yaml").read_text())
    (tmp_path / "jobset.yaml").write_text(yaml.safe_dump(jobset))
    broken = yaml.safe_load((default_catalog_dir() / "apps-deployment-v1.yaml").read_text())
    broken["spec"]["structureDefinition"]["rootComponent"]["specDefinition"] = {"podTemplateSpecPath": 5}
    (tmp_path / "deployment.yaml").write_text(yaml.safe_dump(broken))
    catalog = load_catalog(tmp_path, defer_jq=True)  # parsed only: nothing is built yet
    entry = catalog.get(GVK("jobset.x-k8s.io", "v1alpha2", "JobSet"))
    assert entry is not None and entry.file == "jobset.yaml" and "jobset" in entry.aliases
    with pytest.raises(DefinitionError, match=r"catalog file deployment.yaml: .*podTemplateSpecPath"):
        list(catalog)  # every entry is needed: the broken one is reported
    narrowed = load_catalog(tmp_path, defer_jq=True)
    narrowed.narrow({("jobset.x-k8s.io", "JobSet")})
    assert [e.file for e in narrowed] == ["jobset.yaml"]  # the Deployment entry is never built
    with pytest.raises(DefinitionError, match="deployment.yaml"):
        load_catalog(tmp_path)  # fully checked (wmap validate, catalog, serve): refused at load
    (tmp_path / "shapeless.yaml").write_text("apiVersion: run.ai/v1alpha1\nkind: Karta\nmetadata: {name: x}\nspec: 5\n")
    unreadable = load_catalog(tmp_path, defer_jq=True)
    with pytest.raises(DefinitionError, match="catalog file shapeless.yaml"):
        unreadable.get(GVK("jobset.x-k8s.io", "v1alpha2", "JobSet"))  # no root kind to defer it by


def test_a_deferred_jq_problem_is_reported_when_its_kind_is_needed(tmp_path: Path) -> None:
    doc = yaml.safe_load((default_catalog_dir() / "jobset-x-k8s-io-jobset-v1alpha2.yaml").read_text())
    doc["spec"]["structureDefinition"]["rootComponent"]["statusDefinition"]["phaseDefinition"] = {"path": ".a | del(.b)"}
    (tmp_path / "jobset.yaml").write_text(yaml.safe_dump(doc))
    catalog = load_catalog(tmp_path, defer_jq=True)  # loads: the jq rule waits
    catalog.check({("apps", "Deployment")})  # not this kind: nothing to check
    with pytest.raises(DefinitionError, match=r"catalog file jobset.yaml: .*phaseDefinition.path.*del function"):
        catalog.check({("jobset.x-k8s.io", "JobSet")})
    with pytest.raises(DefinitionError, match="del function"):
        load_catalog(tmp_path)  # fully checked (wmap validate, catalog, serve): refused at load


def test_an_empty_catalog_directory_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(DefinitionError, match=f"catalog directory {tmp_path} holds no \\*.yaml definition file"):
        load_catalog(tmp_path)
    with pytest.raises(DefinitionError, match=f"catalog directory {tmp_path / 'gone'} does not exist"):
        load_catalog(tmp_path / "gone")
    done = subprocess.run([sys.executable, "-m", "workload_map", "--catalog-dir", str(tmp_path), "catalog"],
                          capture_output=True, text=True, timeout=60, cwd=REPO_ROOT)
    assert done.returncode == 1 and done.stdout == ""
    assert f"catalog directory {tmp_path} holds no *.yaml definition file" in done.stderr


def test_the_offline_resolver_forks_and_ends_a_loop_at_the_servers_budget_with_its_error() -> None:
    definition = demo_definition()
    resolver = BlockingResolver(1, 1.0)
    try:
        from workload_map.materialization.pool import definition_key
        from workload_map.materialization.worker import Inputs, Job

        key = definition_key(definition)
        started = time.monotonic()
        outcomes = {o.uid: o for o in resolver.resolve([(Job(o["metadata"]["uid"], key, Inputs(o)), definition)
                                                        for o in (demo("a", loop=True), demo("b"))])}
        took = time.monotonic() - started
        assert resolver._pool._ctx.get_start_method() == "fork"  # no fork server to start
        # the same message as the server's pool (ResolverPool._expire): budget and expression
        assert outcomes["uid-n-a"].status == "timeout"
        assert outcomes["uid-n-a"].error == (
            f"resolution exceeded its 1 s budget while evaluating jq expression {LOOP_PATH!r}")
        assert outcomes["uid-n-b"].status == "ok"  # requeued on the replacement worker
        assert 1.0 <= took < 8.0  # not before the 1 s budget; loose upper bound for a loaded machine
    finally:
        resolver.close()


def test_describe_f_reports_a_looping_definition_at_the_2_s_budget(tmp_path: Path) -> None:
    (tmp_path / "demo.yaml").write_text(yaml.safe_dump(demo_definition().manifest))
    (tmp_path / "objects.yaml").write_text(yaml.safe_dump_all([demo("a", loop=True), demo("b", phase="done")]))
    done = subprocess.run([sys.executable, "-m", "workload_map", "describe", "-f", str(tmp_path / "objects.yaml"),
                           "--definition", str(tmp_path / "demo.yaml"), "-o", "json"],
                          capture_output=True, text=True, timeout=60, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    views = {v["name"]: v for v in json.loads(done.stdout)["items"]}
    # offline runs the server's materializer to completion: the server's error view (definition,
    # workload, budget, the expression it was evaluating; as tests/service/test_materialized.py)
    assert [e["message"] for e in views["a"]["errors"]] == [
        f"definition demo: resolving Demo n/a exceeded the 2 s resolution budget; the worker was ended "
        f"(it was evaluating jq expression {LOOP_PATH!r})"]
    assert views["b"]["phase"] == "Completed"  # .status.p "done" -> completed


# --- lazy jq compilation: a simple path reaches the C library only when jq must run it

from hypothesis import given, settings, strategies as st  # noqa: E402

from workload_map.jq import compile_program  # noqa: E402
from workload_map.jq.fastpath import parse_fast_path  # noqa: E402


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet='.ab_"[]01-|/ ', min_size=1, max_size=14))
def test_every_expression_the_fast_path_accepts_is_valid_jq(expression: str) -> None:
    # the C compile of such an expression is deferred, so its grammar must be a subset of jq's
    import jq

    if parse_fast_path(expression) is not None:
        jq.compile(expression)  # raises ValueError when jq refuses it


def test_a_simple_path_is_compiled_by_jq_only_when_an_input_needs_jq() -> None:
    program = compile_program(".spec.startup_lazy_probe[0]")
    assert program.fast is not None and program._program is None  # no C compile yet
    assert program.all({"spec": {"startup_lazy_probe": [7]}}) == [7]  # fast path: still no C program
    assert program._program is None
    # indexing a string: the fast path defers to jq, which compiles now and raises its own error
    with pytest.raises(Exception, match="Cannot index string with number"):
        program.all({"spec": {"startup_lazy_probe": "text"}})
    assert program._program is not None
    complex_program = compile_program("[.a[] | . % 2] | length")  # `%`: outside the pure-Python subset
    assert complex_program.fast is None and complex_program._program is not None  # compiled at once


def test_the_console_entry_leaves_fast_yet_flushes_runs_exit_handlers_and_keeps_the_exit_code(tmp_path: Path) -> None:
    # `wmap` exits with os._exit after main(): the output must be whole, the exit code main()'s,
    # and the atexit handlers must have run (the stdin copy under TMPDIR is removed by one)
    env = {"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path), "HOME": str(tmp_path)}
    sample = REPO_ROOT / "server" / "workload_map" / "sample"
    done = subprocess.run([sys.executable, "-m", "workload_map", "describe", "-f", str(sample), "-o", "json"],
                          capture_output=True, text=True, timeout=120, cwd=REPO_ROOT, env=env)
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["items"]) == 141  # every workload of the bundled sample, none cut off
    with JOBSET_FILE.open() as stdin:  # `-f -` reads stdin once, into a file it removes at exit
        piped = subprocess.run([sys.executable, "-m", "workload_map", "describe", "-f", "-", "-f", "-", "-o", "json"],
                               stdin=stdin, capture_output=True, text=True, timeout=120, cwd=REPO_ROOT, env=env)
    assert piped.returncode == 0, piped.stderr
    assert json.loads(piped.stdout)["gpu"]["requestedBySpec"] == 12  # one JobSet: 3 pods x 4 GPUs
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("wmap-stdin-")] == []
    missing = subprocess.run([sys.executable, "-m", "workload_map", "describe", "-f", str(tmp_path / "gone.yaml")],
                             capture_output=True, text=True, timeout=120, cwd=REPO_ROOT, env=env)
    assert (missing.returncode, missing.stdout) == (2, "")
    assert "gone.yaml" in missing.stderr


def test_the_server_app_imports_no_http_client_before_a_request_to_an_api_server() -> None:
    # aiohttp (and the Kubernetes client on it) is imported where a request is made: a server
    # in snapshot mode (make run, wmap serve --snapshot) never makes one; importing it with the
    # app cost about 0.1 s of every start
    probe = "import sys, workload_map.app; print(sorted(m for m in ('aiohttp', 'kubernetes_asyncio') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)
    assert (done.returncode, done.stdout.strip()) == (0, "[]"), done.stderr


def test_output_to_a_full_disk_is_one_error_line_not_a_traceback() -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "workload_map", "catalog"], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=120, cwd=REPO_ROOT)
    assert (done.returncode, done.stderr) == (1, "error: cannot write: No space left on device\n")


@pytest.mark.parametrize("argv", [["catalog"], ["describe", "-f", str(JOBSET_FILE)]], ids=["catalog", "describe -f"])
def test_a_command_started_with_stdout_closed_ends_without_a_traceback(argv: list[str]) -> None:
    # `>&-`: Python's sys.stdout is None; the flush at the end raised AttributeError (exit 1)
    done = subprocess.run([sys.executable, "-m", "workload_map", *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, timeout=120, cwd=REPO_ROOT, close_fds=True,
                          preexec_fn=lambda: os.close(1))
    assert (done.returncode, done.stderr) == (0, "")


def test_sigterm_during_describe_from_stdin_removes_the_saved_copy(tmp_path: Path) -> None:
    # `cat dump | wmap describe -f -` saves stdin to TMPDIR. Here stdin stays open, so the
    # command waits in its read with the copy made (no race with its work); stopped with
    # SIGTERM, it leaves through SystemExit and the atexit handler removes the copy
    import signal

    env = {"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path), "HOME": str(tmp_path)}
    process = subprocess.Popen([sys.executable, "-m", "workload_map", "describe", "-f", "-"],
                               stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                               cwd=REPO_ROOT)
    try:
        deadline = time.monotonic() + 60  # a condition waited for, bounded; not a timed assertion
        while not list(tmp_path.glob("wmap-stdin-*")) and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.01)
        assert list(tmp_path.glob("wmap-stdin-*")), "the copy of stdin was never made"
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 143 and b"Traceback" not in err
    assert list(tmp_path.glob("wmap-stdin-*")) == []


# The console entry's start-up (workload_map.cli.entry, workload_map.cli.collector): what a
# fresh interpreter holds after it; the time saved is printed by benchmarks.targets (cli).
ENTRY_PROBE = """
import sys
from workload_map.cli.entry import import_msgspec
import_msgspec()
hidden = "typing_extensions" not in sys.modules
import msgspec
class Pod(msgspec.Struct):
    name: str
    gpus: int = 0
typed = msgspec.json.decode(b'{"name": "worker-0", "gpus": 8}', type=Pod)
import typing_extensions
print(hidden, msgspec.json.encode(typed).decode(), typing_extensions.__name__)
"""


def test_the_entry_imports_msgspec_without_typing_extensions_which_stays_importable() -> None:
    done = subprocess.run([sys.executable, "-c", ENTRY_PROBE], capture_output=True, text=True, timeout=120,
                          cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split(" ", 1) == ["True", '{"name":"worker-0","gpus":8} typing_extensions\n']


def test_a_msgspec_that_needs_typing_extensions_is_imported_the_plain_way(tmp_path: Path) -> None:
    # a stand-in msgspec whose import fails without typing_extensions: the entry retries with it
    (tmp_path / "msgspec").mkdir()
    (tmp_path / "msgspec" / "__init__.py").write_text("from typing_extensions import Required\nSTAND_IN = True\n")
    probe = ("import sys\nfrom workload_map.cli.entry import import_msgspec\nimport_msgspec()\n"
             "print(sys.modules['msgspec'].STAND_IN, 'typing_extensions' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=REPO_ROOT,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)})
    assert (done.returncode, done.stdout) == (0, "True True\n"), done.stderr


# Runs one command as the entry starts it (collector off), then prints whether it is on.
COLLECTOR_PROBE = """
import contextlib, gc, io, sys
gc.disable()
from workload_map.cli.main import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(sys.argv[1:])
print(code, gc.isenabled())
"""


def _big_jobset_file(path: Path) -> Path:
    """The JobSet fixture with a 5 MiB annotation: over the collector's small-input bound."""
    from workload_map.cli.collector import SMALL_INPUT_BYTES

    objects = [doc for doc in yaml.safe_load_all(JOBSET_FILE.read_text(encoding="utf-8")) if doc]
    jobset = next(doc for doc in objects if doc["kind"] == "JobSet")
    jobset["metadata"].setdefault("annotations", {})["padding"] = "x" * (SMALL_INPUT_BYTES + (1 << 20))
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}), encoding="utf-8")
    return path


@pytest.mark.parametrize(("argv", "stdin", "collecting"), [
    (["describe", "-f", str(JOBSET_FILE)], None, False),  # a small file: never turned on
    (["describe", "-f", "BIG"], None, True),
    (["describe", "-f", "-"], JOBSET_FILE, True),  # standard input: its size is not known beforehand
    (["describe", "-f", str(JOBSET_FILE.parent)], None, True),  # a directory
    (["describe", "jobset", "llm-pretrain", "--snapshot", str(REPO_ROOT / "server" / "workload_map" / "sample")],
     None, True),  # describe without -f: from a snapshot or a cluster
    (["catalog"], None, True),
    (["validate", str(REPO_ROOT / "catalog")], None, True),
], ids=["small file", "big file", "stdin", "directory", "snapshot", "catalog", "validate"])
def test_the_collector_is_on_again_for_every_command_but_describe_of_a_small_file(
        tmp_path: Path, argv: list[str], stdin: Path | None, collecting: bool) -> None:
    argv = [str(_big_jobset_file(tmp_path / "big.json")) if a == "BIG" else a for a in argv]
    done = subprocess.run([sys.executable, "-c", COLLECTOR_PROBE, *argv], capture_output=True, text=True,
                          timeout=120, cwd=REPO_ROOT, input=stdin.read_text(encoding="utf-8") if stdin else None)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"0 {collecting}\n"


def test_describe_f_of_a_small_file_imports_neither_logging_nor_shutil_nor_typing_extensions(tmp_path: Path) -> None:
    # each costs 1-5 ms of a ~76 ms one-shot run (docs/engine-speed.md; hashlib: OpenSSL, workload_map.digests;
    # jq: the C binding, every expression of the JobSet, Job and Pod entries being on the pure-Python path;
    # cachetools: imports random),
    # the process as the entry starts it,
    # the catalog's parse cache written by a first run (only writing it needs tempfile)
    env = {**os.environ, "WMAP_CACHE_DIR": str(tmp_path)}
    first = subprocess.run([sys.executable, "-m", "workload_map", "describe", "-f", str(JOBSET_FILE)],
                           capture_output=True, text=True, timeout=120, cwd=REPO_ROOT, env=env)
    assert first.returncode == 0 and list(tmp_path.glob("catalog-*.json")), first.stderr
    probe = ("import contextlib, gc, io, sys\ngc.disable()\nfrom workload_map.cli.entry import import_msgspec\n"
             "import_msgspec()\nfrom workload_map.cli.main import main\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n    code = main(sys.argv[1:])\n"
             "print(code, [m for m in ('logging', 'shutil', 'tempfile', 'typing_extensions', 'hashlib', '_hashlib',\n"
             "                        'jq', 'cachetools', 'random')\n"
             "             if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", probe, "describe", "-f", str(JOBSET_FILE)], capture_output=True,
                          text=True, timeout=120, cwd=REPO_ROOT, env=env)
    assert (done.returncode, done.stdout) == (0, "0 []\n"), done.stderr
