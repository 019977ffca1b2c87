"""Logging set-up: one call, text for terminals or JSON lines for log collectors.

``configure_logging(format, level)`` installs a single stream handler on the root logger
(stderr) through ``logging.config.dictConfig``; modules log with ``log = logger(__name__)``
(``logging.getLogger(__name__)``, looked up when it first logs: :func:`logger`) and put
object identity (GVK, namespace, name) into their messages or into ``extra={...}`` fields,
which the JSON formatter (:mod:`workload_map.logs.formatters`) copies into the line.

Text lines escape control and invisible formatting characters of the message
(:func:`printable`, also used for the CLI's warnings and errors): names in messages come
from objects anyone may create, and an escape sequence or a newline in one would act on the
terminal or forge a line. JSON lines escape them by JSON's rules.

JSON line shape: ``{"time", "level", "logger", "message", ...extra, "exc_info"?}``; the
time is RFC 3339 in UTC with milliseconds. No third-party logging library is needed.

Imports nothing else from ``server`` (bottom layer).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import logging

FORMATS = ("text", "json")


def logger(name: str) -> logging.Logger:
    """The logger ``name`` (``logging.getLogger(name)``), looked up when it is first used.

    :mod:`logging` is imported then, not when the module asking for it is: a one-shot
    ``wmap describe -f`` that logs nothing never imports it (2.7 ms of about 80 ms;
    docs/engine-speed.md, "The one-shot CLI's start-up"). Every attribute (``info``,
    ``warning``, ``isEnabledFor``, ``setLevel``, ...) is the real logger's, so handlers,
    levels and pytest's ``caplog`` see no difference.
    """
    return cast("logging.Logger", _Deferred(name))


class _Deferred:
    """Stands for ``logging.getLogger(name)`` until an attribute of it is asked for."""

    __slots__ = ("_name", "_logger")

    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: logging.Logger | None = None

    def __getattr__(self, attribute: str) -> Any:
        found = self._logger
        if found is None:
            import logging  # here: see logger()

            _escape_last_resort(logging)
            found = self._logger = logging.getLogger(self._name)
        return getattr(found, attribute)

    def __repr__(self) -> str:
        return f"<logger {self._name} (deferred)>"


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


def _escape_last_resort(logging: Any) -> None:
    """Make logging's last-resort handler write :func:`printable` messages.

    It writes the warnings of a process that configured no handler (the offline CLI:
    ``describe -f``'s ``uid ... is held by two objects: ...`` names objects anyone may
    write), as ``configure_logging``'s text lines are escaped. Its own format (the bare
    message) is kept. A handler given a formatter by someone else is left alone.
    """
    handler = logging.lastResort
    if handler is not None and handler.formatter is None:
        from workload_map.logs.formatters import TextFormatter

        handler.setFormatter(TextFormatter("%(message)s"))


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
    import logging  # here: offline commands never configure logging (see logger())

    if not isinstance(logging.getLevelName(level.upper()), int):
        raise ValueError(f"unknown log level {level!r}")
    formatter: dict[str, Any] = (
        {"()": f"{__name__}.formatters.JsonFormatter"} if log_format == "json"
        else {"()": f"{__name__}.formatters.TextFormatter", "format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}
    )
    from logging import config as logging_config

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
