"""The resolver worker's memory budget (issue 29 item 6): an allocation beyond it fails and
the resolution is answered with an error naming the budget, like the time budget's."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from workload_map.materialization import worker


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc/self/statm are Linux's")
def test_an_allocation_beyond_the_budget_fails_in_the_worker_process() -> None:
    # in a child process of its own: the cap cannot be raised again once set
    code = textwrap.dedent("""
        from workload_map.materialization.worker import limit_memory
        assert limit_memory(64 * 1024 * 1024) > 0
        small = bytearray(16 * 1024 * 1024)  # within 64 MiB: fine
        try:
            big = bytearray(256 * 1024 * 1024)
        except MemoryError:
            print("refused")
        else:
            print("allocated")
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert result.stdout.strip() == "refused", result.stderr


def test_a_memory_error_is_answered_with_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    def exhausted(*args: object, **kwargs: object) -> None:
        raise MemoryError

    monkeypatch.setattr(worker, "resolve", exhausted)
    job = worker.Job("uid-1", "d", worker.Inputs({"metadata": {"uid": "uid-1"}}))
    uid, view, error, _ = worker.run_job({"d": None}, job)  # type: ignore[dict-item]
    assert (uid, view, error) == ("uid-1", None, "resolution exceeded its memory budget of 1024 MiB")
