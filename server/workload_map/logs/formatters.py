"""The two line formats of :func:`workload_map.logs.configure_logging`: text and JSON lines.

Imported only when logging is configured (``wmap serve``, the live commands): see
:func:`workload_map.logs.logger`.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from workload_map.logs import printable

#: Attributes every ``LogRecord`` has; anything else came from ``extra=`` and is emitted.
_STANDARD = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName"}


class TextFormatter(logging.Formatter):
    """``time level logger: message``, the message made :func:`printable` (a traceback is kept as it is)."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
        """The line of ``record`` before any traceback."""
        record.message = printable(record.message)
        return super().formatMessage(record)


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON object per line (the shape: :mod:`workload_map.logs`)."""

    def format(self, record: logging.LogRecord) -> str:
        """The JSON line for ``record``."""
        out: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                out[key] = value if isinstance(value, (str, int, float, bool, type(None))) else str(value)
        if record.exc_info:
            out["exc_info"] = self.formatException(record.exc_info)
        return json.dumps(out, separators=(",", ":"))
