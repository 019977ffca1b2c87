"""Logging (workload_map.logs): loggers looked up on first use, the two line formats."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import pytest

from workload_map.logs import configure_logging, logger
from workload_map.paths import REPO_ROOT


def test_a_logger_imports_logging_only_when_it_first_logs() -> None:
    probe = ("import sys\nfrom workload_map.logs import logger\nlog = logger('workload_map.probe')\n"
             "print('logging' in sys.modules, flush=True)\nlog.warning('pod %s evicted', 'worker-0')\n"
             "print('logging' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    # logging's last-resort handler writes a warning of an unconfigured process as the bare message
    assert (done.stdout, done.stderr) == ("False\nTrue\n", "pod worker-0 evicted\n")


def test_an_unconfigured_process_writes_warnings_escaped() -> None:
    # the offline CLI configures no handler: a name with an escape sequence or a right-to-left
    # override must not act on the terminal (as configure_logging's text lines escape it)
    probe = ("from workload_map.logs import logger\n"
             "logger('workload_map.probe').warning('uid %s is held by two objects', 'u\\x1b[31mred\\u202e')")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=REPO_ROOT)
    assert (done.returncode, done.stderr) == (0, "uid u\\x1b[31mred\\u202e is held by two objects\n")


def test_a_logger_is_the_named_logger_for_levels_and_capture(caplog: pytest.LogCaptureFixture) -> None:
    log = logger("workload_map.tests.deferred")
    log.setLevel(logging.ERROR)
    try:
        assert logging.getLogger("workload_map.tests.deferred").level == logging.ERROR
        with caplog.at_level(logging.INFO):
            log.warning("dropped below the logger's own level")
            log.error("quarantined %s", "llm-000/train")
        assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records] == [
            ("workload_map.tests.deferred", "ERROR", "quarantined llm-000/train")]
        assert not log.isEnabledFor(logging.WARNING)
    finally:
        logging.getLogger("workload_map.tests.deferred").setLevel(logging.NOTSET)


def test_json_lines_carry_the_extra_fields_and_text_lines_escape_control_characters(
        capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("json", "INFO")
    logger("workload_map.tests.json").info("resolved %d workloads", 3, extra={"gvk": "JobSet", "gpus": 16})
    line = json.loads(capsys.readouterr().err)
    assert {k: line[k] for k in ("level", "logger", "message", "gvk", "gpus")} == {
        "level": "info", "logger": "workload_map.tests.json", "message": "resolved 3 workloads", "gvk": "JobSet",
        "gpus": 16}
    assert line["time"].endswith("Z") and len(line["time"]) == len("2026-12-07T11:00:00.000Z")
    configure_logging("text", "INFO")
    logger("workload_map.tests.text").warning("pod %s", "bad\x1b[2J")
    assert capsys.readouterr().err.endswith(" WARNING workload_map.tests.text: pod bad\\x1b[2J\n")
