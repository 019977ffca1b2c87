"""A forked resolver worker ends on SIGTERM even when its parent handles SIGTERM.

The blocking resolver forks its worker (start method ``fork``), so the worker inherits the
parent's Python signal handlers. With a SIGTERM handler in the parent (an embedding server,
uvicorn's), a worker that kept it would survive ``Process.terminate()``, and
multiprocessing's exit function, which terminates daemonic children and then joins them,
would wait for ever: the interpreter never exits (seen at the end of a test run).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path


def test_a_process_with_a_sigterm_handler_exits_after_using_the_blocking_resolver(tmp_path: Path) -> None:
    code = textwrap.dedent("""
        import signal
        from workload_map.materialization.pool import BlockingResolver

        signal.signal(signal.SIGTERM, lambda *_: None)  # the parent ignores SIGTERM in Python
        resolver = BlockingResolver(1, 2.0)
        resolver._pool.start()  # a forked worker waiting for jobs; never closed here
        print("started", flush=True)
    """)
    # output to files, not pipes: a process this test run forks meanwhile could hold a pipe open
    out, err = tmp_path / "out", tmp_path / "err"
    with out.open("w") as stdout, err.open("w") as stderr:
        done = subprocess.run([sys.executable, "-c", code], stdout=stdout, stderr=stderr, timeout=60, check=False)
    assert (done.returncode, out.read_text().strip()) == (0, "started"), err.read_text()
