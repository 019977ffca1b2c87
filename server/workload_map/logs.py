"""Logging set-up: one call, text for terminals or JSON lines for log collectors.

``configure_logging(format, level)`` installs a single stream handler on the root logger
(stderr) through ``logging.config.dictConfig``; modules log with
``logging.getLogger(__name__)`` and put object identity (GVK, namespace, name) into their
messages or into ``extra={...}`` fields, which the JSON formatter copies into the line.

Text lines escape control and invisible formatting characters of the message
(:func:`printable`, also used for the CLI's warnings and errors): names in messages come
from objects anyone may create, and an escape sequence or a newline in one would act on the
terminal or forge a line. JSON lines escape them by JSON's rules.

JSON line shape: ``{"time", "level", "logger", "message", ...extra, "exc_info"?}``; the
time is RFC 3339 in UTC with milliseconds. No third-party logging library is needed.

Imports nothing else from ``server`` (bottom layer).
"""

from __future__ import annotations

import json
import logging
import re
import time
from typing import Any

FORMATS = ("text", "json")

#: Attributes every ``LogRecord`` has; anything else came from ``extra=`` and is emitted.
_STANDARD = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName"}


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


def printable(text: str) -> str:
    r"""``text`` with control and invisible formatting characters written as escapes.

    Escaped: C0, DEL and C1 (``\x1b``), zero-width and joiner characters, the line and
    paragraph separators, the bidirectional embeddings, overrides and isolates, and the
    byte order mark (``\u202e``). Names, phases and reasons come from objects anyone who
    can create one may write: an escape sequence in a pod name (``"bad\x1b[2J"``) would
    otherwise act on the terminal of whoever lists it, a newline would forge a line of
    output, a right-to-left override would show text reversed. JSON and YAML output escape
    by their own rules.
    """
    return _CONTROL.sub(_escape, text) if _CONTROL.search(text) else text


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


class TextFormatter(logging.Formatter):
    """``time level logger: message``, the message made :func:`printable` (a traceback is kept as it is)."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
        """The line of ``record`` before any traceback."""
        record.message = printable(record.message)
        return super().formatMessage(record)


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON object per line (see module docstring)."""

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


def configure_logging(log_format: str = "text", level: str = "INFO") -> None:
    """Configure the root logger once for the process.

    Args:
        log_format: ``text`` (``time level logger: message``) or ``json``.
        level: a logging level name (``DEBUG``, ``INFO``, ...).

    Raises:
        ValueError: unknown format or level.
    """
    if log_format not in FORMATS:
        raise ValueError(f"log format must be one of {', '.join(FORMATS)}, got {log_format!r}")
    if not isinstance(logging.getLevelName(level.upper()), int):
        raise ValueError(f"unknown log level {level!r}")
    formatter: dict[str, Any] = (
        {"()": f"{__name__}.JsonFormatter"} if log_format == "json"
        else {"()": f"{__name__}.TextFormatter", "format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}
    )
    from logging import config as logging_config  # here: offline commands never configure logging

    logging_config.dictConfig({
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"main": formatter},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "main", "stream": "ext://sys.stderr"}},
        "root": {"handlers": ["stderr"], "level": level.upper()},
        # uvicorn configures its own loggers unless told not to; route them through ours
        "loggers": {name: {"handlers": [], "propagate": True} for name in ("uvicorn", "uvicorn.error",
                                                                           "uvicorn.access")},
    })
