"""The jq builtins the pure evaluator runs (``workload_map.jq.fastpath``), as jq 1.7/1.8 defines them.

Each entry of :data:`BUILTINS` maps ``(name, arity)`` to a factory taking the compiled
arguments and giving the builtin's closure ``(input, env) -> outputs``. Definitions follow
jq's ``src/builtin.jq`` and ``src/builtin.c``: ``map(f)`` is ``[.[] | f]``, ``select(f)``
keeps the input for each true output of ``f``, ``any(g; c)`` / ``all(g; c)`` stop at the
first deciding output, ``IN(s)`` is ``any(s == .; .)``, ``first(f)`` stops after one output,
``add`` is ``reduce .[] as $x (null; . + $x)``, ``max``/``min`` keep the last / first of
equal values, ``ltrimstr``/``startswith`` require strings. An input type a builtin does not
cover here gives up (``GiveUp``: C jq answers); a case where jq certainly raises raises
``JqError`` (suppressed by ``?``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator
from decimal import Decimal
from typing import Any

from workload_map.jq import values as jv
from workload_map.jq.values import Array, Double, GiveUp, JqError, Literal, Object, truthy

Env = dict[Any, Any]
"""Variables by name and ``def`` functions by ``(name, arity)``."""
Eval = Callable[[Any, Env], Iterable[Any]]
"""A compiled expression: its outputs on an input, in an environment."""

_NUMBER_TEXT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_INTEGER_TEXT = re.compile(r"-?\d+")


def _values(value: Any) -> Iterator[Any]:
    """Jq's ``.[]``."""
    if isinstance(value, list):
        return map(jv.read, value)
    if isinstance(value, dict):
        return (jv.read(value[k]) for k in jv.iteration_keys(value))
    raise JqError("cannot iterate")


def _length(value: Any) -> Any:
    if value is None:
        return 0
    if isinstance(value, (str, list, dict)):
        return len(value)
    if isinstance(value, bool):
        raise JqError("boolean has no length")
    raise GiveUp("length of a number")


def _keys(value: Any) -> Any:
    if isinstance(value, dict):
        return [jv.read(k) for k in sorted(value)]
    if isinstance(value, list):
        return list(range(len(value)))
    raise JqError("has no keys")


def _add(value: Any) -> Any:
    total = None
    for item in _values(value):
        total = jv.add(total, item)
    return total


def _extreme(value: Any, *, largest: bool) -> Any:
    if not isinstance(value, list):
        raise GiveUp("max/min of a non-array")
    best: Any = None
    for at, item in enumerate(value):
        order = jv.compare(item, best) if at else 0
        if at == 0 or (order >= 0 if largest else order < 0):
            best = item
    return best


def _floor(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise JqError("number required")
    return Double(math.floor(jv.number(value)))


def _tonumber(value: Any) -> Any:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    if not isinstance(value, str) or not _NUMBER_TEXT.fullmatch(value):
        raise GiveUp("tonumber of this input")  # jq's errors (and "nan") are C jq's to give
    text = str(Decimal(value))
    if _INTEGER_TEXT.fullmatch(text) and text != "-0":
        return jv.number(int(text))
    literal = Literal(jv.number(float(text)))
    literal.text = text
    return literal


def _to_entries(value: Any) -> Any:
    if not isinstance(value, dict):
        raise GiveUp("to_entries of a non-object")
    return Array(Object(key=jv.read(k), value=jv.read(value[k])) for k in jv.iteration_keys(value))


def _end(value: Any, at: int) -> Any:
    if isinstance(value, list):
        return jv.read(value[at]) if value else None
    if value is None:
        return None
    raise GiveUp("first/last of a non-array")


def _strings(value: Any, prefix: Any) -> tuple[str, str]:
    if not isinstance(value, str) or not isinstance(prefix, str):
        raise JqError("startswith() requires string inputs")
    return value, prefix


def _startswith(value: Any, prefix: Any) -> Any:
    text, start = _strings(value, prefix)
    return text.startswith(start)


def _endswith(value: Any, suffix: Any) -> Any:
    if not isinstance(value, str) or not isinstance(suffix, str):
        raise JqError("endswith() requires string inputs")
    return value.endswith(suffix)


def _ltrimstr(value: Any, prefix: Any) -> Any:
    text, start = _strings(value, prefix)
    return text[len(start):] if text.startswith(start) else text


def _has(value: Any, key: Any) -> Any:
    if isinstance(value, dict) and isinstance(key, str):
        return key in value
    if isinstance(value, list) and type(key) is int:
        return 0 <= key < len(value)
    raise GiveUp("has on these types")


_TYPE_NAMES = ("null", "boolean", "boolean", "number", "string", "array", "object")
_ASCII_LOWER = {code: code + 32 for code in range(ord("A"), ord("Z") + 1)}


def _ascii_downcase(value: Any) -> Any:
    if not isinstance(value, str):
        raise JqError("cannot be lowercased")
    return value.translate(_ASCII_LOWER)


def _unary(function: Callable[[Any], Any]) -> Callable[[], Eval]:
    """A builtin of no argument with one output."""
    return lambda: lambda inp, env: (function(inp),)


def _of_values(function: Callable[[Any, Any], Any]) -> Callable[[Eval], Eval]:
    """A C builtin of one argument: one output per output of the argument."""
    return lambda arg: lambda inp, env: (function(inp, a) for a in arg(inp, env))


def _select(condition: Eval) -> Eval:
    return lambda inp, env: (inp for c in condition(inp, env) if truthy(c))


def _map(function: Eval) -> Eval:
    return lambda inp, env: (Array(jv.element(out) for item in _values(inp) for out in function(item, env)),)


def _any_of(generator: Eval, condition: Eval, *, every: bool) -> Eval:
    def run(inp: Any, env: Env) -> Iterator[Any]:
        for item in generator(inp, env):
            for c in condition(item, env):
                if truthy(c) != every:
                    yield not every
                    return
        yield every
    return run


def _iterate_input(inp: Any, env: Env) -> Iterable[Any]:
    return _values(inp)


def _identity(inp: Any, env: Env) -> Iterable[Any]:
    return (inp,)


def _first_of(generator: Eval) -> Eval:
    def run(inp: Any, env: Env) -> Iterator[Any]:
        for value in generator(inp, env):
            yield value
            return
    return run


def _member(source: Eval) -> Eval:
    def run(inp: Any, env: Env) -> Iterator[Any]:
        yield any(jv.equal(value, inp) for value in source(inp, env))
    return run


def _with_entries(function: Eval) -> Eval:
    def run(inp: Any, env: Env) -> Iterator[Any]:
        result = Object()
        for entry in _to_entries(inp):
            for out in function(entry, env):
                if not isinstance(out, dict) or set(out) != {"key", "value"} or not isinstance(out["key"], str):
                    raise GiveUp("from_entries of other entries")
                result[out["key"]] = jv.element(out["value"])
        yield result
    return run


def _empty() -> Eval:
    return lambda inp, env: ()


def _error(message: Eval | None = None) -> Eval:
    def run(inp: Any, env: Env) -> Iterator[Any]:
        for _ in (inp,) if message is None else message(inp, env):
            raise JqError("error")
        yield from ()
    return run


BUILTINS: dict[tuple[str, int], Callable[..., Eval]] = {
    ("empty", 0): _empty,
    ("error", 0): _error,
    ("error", 1): _error,
    ("not", 0): _unary(lambda v: not truthy(v)),
    ("length", 0): _unary(_length),
    ("keys", 0): _unary(_keys),
    ("add", 0): _unary(_add),
    ("max", 0): _unary(lambda v: _extreme(v, largest=True)),
    ("min", 0): _unary(lambda v: _extreme(v, largest=False)),
    ("floor", 0): _unary(_floor),
    ("type", 0): _unary(lambda v: _TYPE_NAMES[jv.kind(v)]),
    ("ascii_downcase", 0): _unary(_ascii_downcase),
    ("tostring", 0): _unary(jv.tostring),
    ("tonumber", 0): _unary(_tonumber),
    ("to_entries", 0): _unary(_to_entries),
    ("first", 0): _unary(lambda v: _end(v, 0)),
    ("last", 0): _unary(lambda v: _end(v, -1)),
    ("any", 0): lambda: _any_of(_iterate_input, _identity, every=False),
    ("all", 0): lambda: _any_of(_iterate_input, _identity, every=True),
    ("any", 1): lambda c: _any_of(_iterate_input, c, every=False),
    ("all", 1): lambda c: _any_of(_iterate_input, c, every=True),
    ("any", 2): lambda g, c: _any_of(g, c, every=False),
    ("all", 2): lambda g, c: _any_of(g, c, every=True),
    ("startswith", 1): _of_values(_startswith),
    ("endswith", 1): _of_values(_endswith),
    ("ltrimstr", 1): _of_values(_ltrimstr),
    ("has", 1): _of_values(_has),
    ("select", 1): _select,
    ("map", 1): _map,
    ("first", 1): _first_of,
    ("IN", 1): _member,
    ("with_entries", 1): _with_entries,
}
