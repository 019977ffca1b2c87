"""Request parsing shared by the REST handlers: JSON bodies, booleans, durations."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from starlette.requests import Request

from workload_map.definitions.load import DuplicateKey, load_documents, unique_pairs
from workload_map.errors import InvalidRequest

_NUMBER = re.compile(r"\d+(?:\.\d+)?", re.ASCII)
_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


async def body_text(request: Request) -> str:
    """The request body as UTF-8 text.

    Raises:
        InvalidRequest: empty body or not UTF-8.
    """
    raw = await request.body()
    if not raw.strip():
        raise InvalidRequest("the request body is empty")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidRequest("the request body is not UTF-8 text") from None


async def json_object(request: Request) -> dict[str, Any]:
    """The request body decoded as a JSON object.

    Raises:
        InvalidRequest: empty, not JSON (the message gives line and column) or not an object.
    """
    text = await body_text(request)
    try:  # in a worker thread: a 2 MiB body is tens of ms of decoding the event loop must not spend
        value = await asyncio.to_thread(json.loads, text, object_pairs_hook=unique_pairs)
    except DuplicateKey as exc:
        raise InvalidRequest(f"the request body holds the key {json.dumps(str(exc))} twice in one object; "
                             "each key may appear once") from None
    except json.JSONDecodeError as exc:
        raise InvalidRequest(f"the request body is not valid JSON: {exc.msg} at line {exc.lineno} "
                             f"column {exc.colno}") from None
    except RecursionError:
        raise InvalidRequest("the request body is not readable JSON: it is nested too deeply") from None
    except ValueError as exc:  # an integer beyond sys.get_int_max_str_digits() (4,300 digits)
        raise InvalidRequest(f"the request body is not readable JSON: {exc}") from None
    if not isinstance(value, dict):
        raise InvalidRequest(f"the request body must be a JSON object, got {type(value).__name__}")
    if _SURROGATE_ESCAPE.search(text):
        refuse_surrogates(value)
    return value


def refuse_surrogates(value: Any) -> None:
    r"""Refuse a decoded body holding a lone UTF-16 surrogate (a ``\ud800`` escape without its pair).

    Python's ``json`` decodes such an escape to a code point that is not Unicode text: it
    cannot be encoded as UTF-8, so the answer (or a later write of the object) would fail
    after the change was made. Kubernetes' decoder replaces it; we refuse the body instead,
    before anything is written.

    Raises:
        InvalidRequest: naming the path of the first such key or string (``annotations.x``).
    """
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                where = f"{path}.{key}" if path else key
                if _SURROGATE.search(key):
                    raise InvalidRequest(f"the request body key {where!a} holds a lone UTF-16 surrogate: "
                                         "not Unicode text")
                stack.append((where, child))
        elif isinstance(item, list):
            stack.extend((f"{path}[{i}]", child) for i, child in enumerate(item))
        elif isinstance(item, str) and _SURROGATE.search(item):
            raise InvalidRequest(f"the request body value at {path or '(top)'!a} holds a lone UTF-16 surrogate: "
                                 "not Unicode text")


async def body_object(request: Request) -> dict[str, Any]:
    """The request body as an object: YAML when sent as ``application/yaml``, else JSON.

    Both registration endpoints take the same two media types (issue 29 item 8). YAML is
    decoded in a worker thread by the definition loader (size and alias limits included).

    Raises:
        InvalidRequest: empty, undecodable, several documents, or not an object.
    """
    if request.headers.get("content-type", "").split(";", 1)[0].strip().lower() != "application/yaml":
        return await json_object(request)
    text = await body_text(request)
    docs = await asyncio.to_thread(load_documents, text, source="the request body")
    if len(docs) != 1 or not isinstance(docs[0], dict):
        shown = f"{len(docs)} documents" if len(docs) != 1 else type(docs[0]).__name__
        raise InvalidRequest(f"the request body must be one YAML mapping, got {shown}")
    if _SURROGATE_ESCAPE.search(text):
        refuse_surrogates(docs[0])
    return docs[0]


def flag(request: Request, name: str) -> bool:
    """A boolean query parameter (``true``/``1``/``yes``, or present without a value).

    Raises:
        InvalidRequest: any other value.
    """
    value = request.query_params.get(name)
    if value is None:
        return False
    if value.lower() in ("", "true", "1", "yes"):
        return True
    if value.lower() in ("false", "0", "no"):
        return False
    raise InvalidRequest(f"query parameter {name} must be true or false, got {value!r}")


def duration(text: str, *, name: str, maximum: float) -> float:
    """Seconds from a Go/Kubernetes duration (``1m30s``, ``500ms``, ``1.5h``) or a bare number of seconds.

    The syntax of Go's ``time.ParseDuration`` (https://pkg.go.dev/time#ParseDuration), which
    kubectl's ``--timeout`` and ``--request-timeout`` use: one or more decimal numbers each
    with a unit ``ns``, ``us`` (``µs``), ``ms``, ``s``, ``m``, ``h``; no sign here.

    Raises:
        InvalidRequest: malformed, or above ``maximum`` seconds.
    """
    stripped = text.strip()
    if _NUMBER.fullmatch(stripped):
        seconds = float(stripped)
    else:
        parts = list(_PART.finditer(stripped))
        if not parts or "".join(p.group(0) for p in parts) != stripped:
            raise InvalidRequest(f"{name} must be a duration such as 60s, 500ms, 2m or 1m30s, got {text!r}")
        seconds = sum(float(p.group(1)) * _UNITS[p.group(2)] for p in parts)
    if seconds > maximum:
        raise InvalidRequest(f"{name} must be at most {maximum:g}s, got {text!r}")
    return seconds


def integer(request: Request, name: str, default: int | None = None) -> int | None:
    """An integer query parameter.

    Raises:
        InvalidRequest: not an integer.
    """
    value = request.query_params.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise InvalidRequest(f"query parameter {name} must be an integer, got {value!r}") from None
