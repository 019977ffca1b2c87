"""``python -m benchmarks.fastjson``: snapshot JSON reading and ``/livez`` during a snapshot load.

Issue 23 item 4. Two steps, printed with the load average:

1. parse: ``json.load`` of the whole dump (the floor named by the issue) beside
   ``workload_map.kube.snapshot.iter_objects`` (the reader ``wmap serve --snapshot`` uses),
   CPU seconds of each (the figure to compare on a loaded machine) and their ratio; then
   the whole load into a ``SnapshotReader`` (parse, trim, compact, index) and, of it, the
   compaction (:func:`store`);
2. ``--serve``: start ``wmap serve --snapshot DUMP`` on 127.0.0.1 and poll ``/livez``
   every 50 ms until ``/readyz`` is 200: seconds to the first ``/livez`` answer, the p99 and
   slowest ``/livez`` answer meanwhile, seconds to ready. Target: ``/livez`` within 1 s.

The same script measures the code before a change when that code comes first on
``PYTHONPATH`` (the server child inherits it). Options: ``--workloads N`` (500: a dump
written with ``benchmarks.snapshot.write_dump``, removed afterwards), ``--dump PATH`` (an
existing dump instead), ``--serve``, ``--timeout S`` (600).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.snapshot import _free_port, write_dump
from benchmarks.stats import percentile


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def parse(path: Path) -> dict[str, Any]:
    """CPU seconds of ``json.load`` (whole file) and of the snapshot reader (streamed)."""
    from workload_map.kube.snapshot import iter_objects

    started = _cpu()
    with path.open() as handle:
        whole = json.load(handle)
    floor = _cpu() - started
    count = len(whole.get("items", []))
    del whole
    started = _cpu()
    streamed = sum(1 for _ in iter_objects(path))
    ours = _cpu() - started
    return {"objects": streamed, "json_load_cpu_s": round(floor, 2), "reader_cpu_s": round(ours, 2),
            "ratio": round(ours / floor, 2) if floor else None, "same_count": count == streamed, **store(path)}


def store(path: Path) -> dict[str, Any]:
    """CPU seconds of the whole load as ``wmap serve --snapshot`` does it, and of its compaction.

    The load: ``SnapshotReader`` over the streamed objects (parse, trim, compact, index),
    the collector frozen every 2,000 objects as ``workload_map.kube.snapshotload`` does.
    Compaction: the thread CPU inside ``workload_map.kube.trim.compact`` (wrapped for the
    measurement; the wrapper's own cost, one call per object, is in both figures).
    """
    import threading

    from workload_map.kube import trim
    from workload_map.kube.snapshot import SnapshotReader
    from workload_map.kube.snapshotload import _objects

    inner, spent = trim.compact, [0.0]

    def timed(value: Any, shared: Any = None) -> Any:
        started = time.thread_time()
        try:
            return inner(value, shared)
        finally:
            spent[0] += time.thread_time() - started

    trim.compact = timed  # type: ignore[assignment]
    try:
        started = _cpu()
        reader = SnapshotReader(_objects([str(path)], threading.Event()))
        load = _cpu() - started
    finally:
        trim.compact = inner  # type: ignore[assignment]
    return {"load_cpu_s": round(load, 2), "compaction_cpu_s": round(spent[0], 2),
            "stored": sum(reader.count(gvk) for gvk in reader.gvks())}


def serve(path: Path, timeout: float) -> dict[str, Any]:
    """Seconds to the first ``/livez``, its slowest answer while loading, seconds to ready."""
    import httpx

    port = _free_port()
    # ``python -m``, not the installed ``wmap`` script: the script names the entry of the tree
    # installed, while the code measured is the one first on PYTHONPATH (benchmarks.targets' sides)
    command = [sys.executable, "-m", "workload_map", "serve", "--snapshot", str(path), "--host", "127.0.0.1",
               "--port", str(port), "--state-dir", tempfile.mkdtemp(prefix="wmap-bench-state-")]
    started = time.monotonic()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out: dict[str, Any] = {"first_livez_s": None, "slowest_livez_s": 0.0, "ready_s": None}
    base = f"http://127.0.0.1:{port}"
    answered: list[float] = []  # seconds of every /livez answer after the first, until ready
    try:
        with httpx.Client(timeout=30) as client:
            while time.monotonic() - started < timeout and proc.poll() is None:
                asked = time.monotonic()
                try:
                    live = client.get(f"{base}/livez")
                except httpx.HTTPError:
                    time.sleep(0.05)
                    continue
                if live.status_code == 200:
                    if out["first_livez_s"] is None:
                        out["first_livez_s"] = round(time.monotonic() - started, 2)
                    else:
                        answered.append(time.monotonic() - asked)
                        out["slowest_livez_s"] = round(max(answered), 3)
                if client.get(f"{base}/readyz").status_code == 200:
                    out["ready_s"] = round(time.monotonic() - started, 1)
                    break
                time.sleep(0.05)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
    out["livez_n"] = len(answered)
    out["livez_p99_s"] = round(percentile(answered, 99), 3) if answered else None
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.fastjson", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workloads", type=int, default=500)
    p.add_argument("--dump", type=Path)
    p.add_argument("--serve", action="store_true")
    p.add_argument("--timeout", type=float, default=600.0)
    args = p.parse_args(argv)
    dump, written = args.dump, None
    if dump is None:
        written = dump = Path(tempfile.mkdtemp(prefix="wmap-fastjson-")) / "dump.json"
        write_dump(args.workloads, dump)
    try:
        doc: dict[str, Any] = {"dump_bytes": dump.stat().st_size, "load_before": os.getloadavg(), **parse(dump)}
        if args.serve:
            doc.update(serve(dump, args.timeout))
        doc["load_after"] = os.getloadavg()
    finally:
        if written is not None:
            written.unlink(missing_ok=True)
    print(json.dumps(doc))
    print(f"parse: reader {doc['reader_cpu_s']} s CPU vs json.load {doc['json_load_cpu_s']} s ({doc['ratio']}x the floor); "
          f"load (parse, trim, compact, index) {doc['load_cpu_s']} s CPU, of which compaction {doc['compaction_cpu_s']} s"
          + (f"; /livez first {doc['first_livez_s']} s (target <= 1 s), slowest {doc['slowest_livez_s']} s, "
             f"ready {doc['ready_s']} s" if args.serve else "")
          + f"; load average {doc['load_before'][0]:.2f} -> {doc['load_after'][0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
