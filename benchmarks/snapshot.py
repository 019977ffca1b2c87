"""``python -m benchmarks.snapshot``: a ``kubectl get -o json`` dump of a big cluster, served.

Steps, each printed beside its target (issue 16: a 20,000-workload dump served within
2 minutes and under 4 GB of RSS):

1. write the dump: every object of ``generate(N)`` as one ``kind: List`` JSON document,
   indented by 4 as ``kubectl get -o json`` writes it (streamed, never held whole);
2. load it in a fresh child process through ``SnapshotReader.from_paths`` (the code
   ``wmap serve --snapshot`` runs), then resolve every workload once with
   ``WorkloadService.workloads()``: seconds for each and the child's peak RSS
   (``ru_maxrss``);
3. unless ``--no-serve``: start ``wmap serve --snapshot DUMP`` on 127.0.0.1, poll
   ``/readyz`` and then ask ``/api/v1/workloads?limit=1`` (seconds from start), peak RSS
   from ``/proc/PID/status`` ``VmHWM``.

Options: ``--workloads N`` (20000), ``--dump PATH`` (default: a temporary file, removed
afterwards unless ``--keep``; with ``--reuse`` an existing dump is served as it is),
``--no-serve``, ``--timeout S`` (bound of each step, 600), ``--seed``.

Wall-clock seconds depend on what else the machine runs: each figure is printed with the
CPU seconds the process used (user + system), which do not, and with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.machine import cpu_seconds

TARGET_SECONDS = 120.0
TARGET_RSS_BYTES = 4 * 1000**3


def write_dump(workloads: int, path: Path, *, seed: int = 1) -> dict[str, Any]:
    """Write the ``kind: List`` dump of ``generate(workloads)``; objects, bytes, seconds."""
    from benchmarks.generator import generate

    started, count = time.monotonic(), 0
    with path.open("w", encoding="utf-8") as out:
        out.write('{\n    "apiVersion": "v1",\n    "items": [')
        for obj in generate(workloads, seed=seed).iter_objects():
            text = json.dumps(obj, indent=4).replace("\n", "\n        ")
            out.write(("," if count else "") + "\n        " + text)
            count += 1
        out.write('\n    ],\n    "kind": "List",\n    "metadata": {\n        "resourceVersion": ""\n    }\n}\n')
    return {"objects": count, "bytes": path.stat().st_size, "seconds": round(time.monotonic() - started, 1)}


def load_in_process(path: Path) -> dict[str, Any]:
    """Load ``path`` with ``SnapshotReader.from_paths`` and resolve every workload once."""
    from workload_map.paths import default_catalog_dir
    from workload_map.definitions.catalog import load_catalog
    from workload_map.definitions.registry import DefinitionRegistry
    from workload_map.kube.snapshot import SnapshotReader
    from workload_map.service.workloads import WorkloadService

    registry = DefinitionRegistry(load_catalog(default_catalog_dir()))
    started, cpu_start = time.monotonic(), cpu_seconds()
    reader = SnapshotReader.from_paths(path)
    loaded, loaded_peak = time.monotonic(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    load_cpu = cpu_seconds() - cpu_start
    views = WorkloadService(registry, reader).workloads()
    resolved = time.monotonic()
    return {"objects": sum(reader.count(g) for g in reader.gvks()), "workloads": len(views),
            "load_seconds": round(loaded - started, 1), "resolve_seconds": round(resolved - loaded, 1),
            "load_peak_rss_bytes": loaded_peak, "load_cpu_seconds": round(load_cpu, 1),
            "resolve_cpu_seconds": round(cpu_seconds() - cpu_start - load_cpu, 1),
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _vm_hwm(pid: int) -> int:
    """Peak RSS of ``pid`` in bytes (``VmHWM``), 0 when unknown."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def serve(path: Path, timeout: float) -> dict[str, Any]:
    """Seconds until ``wmap serve --snapshot path`` answers ``/readyz`` and a first list."""
    import httpx

    port = _free_port()
    # ``python -m``: the code first on PYTHONPATH, whichever tree installed the ``wmap`` script
    command = [sys.executable, "-m", "workload_map", "serve", "--snapshot", str(path), "--host", "127.0.0.1", "--port", str(port),
               "--state-dir", tempfile.mkdtemp(prefix="wmap-bench-state-")]
    started = time.monotonic()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out: dict[str, Any] = {}
    try:
        base = f"http://127.0.0.1:{port}"
        while time.monotonic() - started < timeout and proc.poll() is None:
            try:
                if httpx.get(f"{base}/readyz", timeout=5).status_code == 200:
                    out["ready_seconds"] = round(time.monotonic() - started, 1)
                    out["ready_cpu_seconds"] = round(cpu_seconds(proc.pid), 1)
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        if "ready_seconds" in out:
            reply = httpx.get(f"{base}/api/v1/workloads?limit=1", timeout=max(1.0, timeout))
            out["first_list_seconds"] = round(time.monotonic() - started, 1)
            out["first_list_cpu_seconds"] = round(cpu_seconds(proc.pid), 1)
            out["first_list_status"] = reply.status_code
            out["total"] = reply.json().get("totalCount") if reply.status_code == 200 else None
        out["peak_rss_bytes"] = _vm_hwm(proc.pid)
        out["exit_code"] = proc.poll()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
    return out


def _row(name: str, seconds: float | None, cpu: float | None, rss: int | None) -> str:
    """One table row: wall and CPU seconds, peak RSS, the target and whether it is met."""
    if seconds is None:
        return f"{name:<40} {'not reached':>14}"
    met = seconds <= TARGET_SECONDS and (rss or 0) <= TARGET_RSS_BYTES
    return (f"{name:<40} {seconds:>7.1f} s {cpu or 0:>7.1f} s {(rss or 0) / 1000**3:>6.2f} GB   "
            f"<= {TARGET_SECONDS:.0f} s, < {TARGET_RSS_BYTES / 1000**3:.0f} GB   {'yes' if met else 'no'}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.snapshot", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workloads", type=int, default=20000)
    p.add_argument("--dump", type=Path, default=None)
    p.add_argument("--keep", action="store_true")
    p.add_argument("--reuse", action="store_true", help="serve an existing --dump instead of writing it")
    p.add_argument("--no-serve", action="store_true")
    p.add_argument("--timeout", type=float, default=600.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--load", type=Path, default=None, help=argparse.SUPPRESS)  # the child process
    args = p.parse_args(argv)
    if args.load is not None:
        print(json.dumps(load_in_process(args.load)))
        return 0
    dump = args.dump or Path(tempfile.mkdtemp(prefix="wmap-bench-")) / "dump.json"
    try:
        print(f"machine: {os.cpu_count()} cores, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        if args.reuse and args.dump is not None and dump.exists():
            print(f"dump: {dump} as it is, {dump.stat().st_size / 1000**3:.2f} GB of JSON", flush=True)
        else:
            written = write_dump(args.workloads, dump, seed=args.seed)
            print(f"dump: {args.workloads} workloads, {written['objects']} objects, "
                  f"{written['bytes'] / 1000**3:.2f} GB of JSON, written in {written['seconds']} s", flush=True)
        child = subprocess.run([sys.executable, "-m", "benchmarks.snapshot", "--load", str(dump)],
                               capture_output=True, text=True, timeout=args.timeout, check=True)
        loaded = json.loads(child.stdout.strip().splitlines()[-1])
        print(f"in process: {loaded['objects']} objects, {loaded['workloads']} workloads resolved")
        print(f"{'figure':<40} {'wall':>9} {'CPU':>9} {'peak RSS':>9}   target")
        print(_row("SnapshotReader.from_paths", loaded["load_seconds"], loaded["load_cpu_seconds"],
                   loaded["load_peak_rss_bytes"]))
        print(_row("  + resolve every workload once", loaded["load_seconds"] + loaded["resolve_seconds"],
                   loaded["load_cpu_seconds"] + loaded["resolve_cpu_seconds"], loaded["peak_rss_bytes"]))
        if not args.no_serve:
            served = serve(dump, args.timeout)
            print(_row("wmap serve: /readyz 200", served.get("ready_seconds"), served.get("ready_cpu_seconds"),
                       served.get("peak_rss_bytes")))
            print(_row(f"wmap serve: first list (total {served.get('total')})", served.get("first_list_seconds"),
                       served.get("first_list_cpu_seconds"), served.get("peak_rss_bytes")))
        print(f"load average at the end {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    finally:
        if not args.keep and args.dump is None:
            dump.unlink(missing_ok=True)
            os.rmdir(dump.parent)
    return 0


if __name__ == "__main__":
    sys.exit(main())
