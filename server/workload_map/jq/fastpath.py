"""Pure-Python evaluation of the jq the catalog uses, with results identical to C jq.

Serializing a whole object to JSON for the C library costs far more than walking a few
dict keys, so expressions inside a subset of jq are compiled here into Python closures:
navigation (``.a``, ``."a"``, ``.["a"]``, ``.[n]``, ``.[e]``, ``.[a:b]``, ``.[]``, each with
``?``), ``|``, ``,``, ``//``, ``and``/``or``, comparisons (jq's total order across types),
``+ - * /``, ``if``/``elif``/``else``, string interpolation, array and object construction,
``as $x``, ``def f($a; ...)`` (not recursive) and the builtins of :data:`_BUILTINS`. The
parser is :mod:`workload_map.jq.parse`; jq's value semantics are
:mod:`workload_map.jq.values`. Outputs are the Python values the ``jq`` binding would give
(integral numbers as ``int``); objects and arrays taken from the input are returned as they
are (the same values, by ``==``).

Strings read from the input holding a surrogate, and input subtrees returned whole that hold
one or a non-finite number, give up (``values.read``, ``values.irregular``): C jq reads
them differently from their Python value.

Identity rule: whenever jq would raise (indexing a number, iterating null, adding a string
to a number...) outside a ``?``, or the exact result is in doubt (integers beyond 2**53,
``tostring`` of a container, a builtin on an input type it does not cover),
:meth:`FastPath.evaluate` returns ``None`` and the caller runs C jq, so error messages and
every corner stay exactly jq's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from workload_map.jq import values as jv
from workload_map.jq.builtins import BUILTINS as _BUILTINS
from workload_map.jq.builtins import Env, Eval
from workload_map.jq.parse import Node, parse
from workload_map.jq.values import Array, GiveUp, JqError, Object, truthy


class _Refused(Exception):
    """Outside the subset the compiler covers."""


class FastPath:
    """A compiled expression of the subset.

    Attributes:
        tree: the parsed expression (:mod:`workload_map.jq.parse` nodes).
    """

    __slots__ = ("tree", "_run")

    def __init__(self, tree: Node, run: Eval) -> None:
        self.tree = tree
        self._run = run

    def evaluate(self, value: Any, limit: int | None = None) -> list[Any] | None:
        """Every output of the expression on ``value``, or ``None`` to defer to C jq.

        ``limit``: stop after that many outputs (the list then has exactly ``limit``), as C
        jq's iteration stops: ``first`` asks for 1, ``all`` for the result cap, so
        ``.a[] as $x | .a[] as $y | .a[]`` over 1,000 items is 1,000 steps, not 10^9.
        """
        try:
            outputs = []
            for v in self._run(value, {}):
                outputs.append(jv.output(v))
                if len(outputs) == limit:
                    break
            return outputs
        except (GiveUp, JqError, RecursionError, TypeError, ValueError, OverflowError):
            return None


def parse_fast_path(expression: str) -> FastPath | None:
    """Compile ``expression`` for the pure path, or ``None`` when it is outside the subset."""
    tree = parse(expression)
    if tree is None:
        return None
    try:
        return FastPath(tree, _compile(tree, frozenset()))
    except (_Refused, RecursionError):
        return None


def navigation_paths(tree: Node) -> list[tuple[Any, ...]] | None:
    """The steps of a plain navigation expression, else ``None``.

    Plain navigation: ``//`` alternatives of ``|`` pipelines of ``.a``/``.[n]``/``.[]``
    steps without ``?`` (a literal may close the alternatives). Each alternative is a
    tuple of steps ``("field", key)``, ``("index", n)`` or ``("iter",)``; literal
    alternatives are left out.
    """
    if tree[0] == "alt":
        first, rest = navigation_paths(tree[1]), navigation_paths(tree[2]) if tree[2][0] != "lit" else []
        return None if first is None or rest is None or len(first) != 1 else first + rest
    steps: list[tuple[Any, ...]] = []
    return [tuple(steps)] if _steps(tree, steps) else None


def _steps(node: Node, steps: list[tuple[Any, ...]]) -> bool:
    kind = node[0]
    if kind == "id":
        return True
    if kind == "pipe":
        return _steps(node[1], steps) and _steps(node[2], steps)
    if kind in ("field", "iter", "index") and not node[-1] and _steps(node[1], steps):
        if kind == "index":
            if node[2][0] != "lit" or type(node[2][1]) is not int:
                return False
            steps.append(("index", node[2][1]))
        else:
            steps.append(("field", node[2]) if kind == "field" else ("iter",))
        return True
    return False


def _compile(node: Node, scope: frozenset[Any]) -> Eval:
    """The closure of ``node``.

    ``scope`` holds the variable names and ``(name, arity)`` of the functions defined around
    it (``("self", name, arity)`` inside a body: a call of it would recurse).

    Raises:
        _Refused: a construct, builtin or recursion outside the subset.
    """
    kind = node[0]
    if kind == "id":
        return lambda inp, env: (inp,)
    if kind == "lit":
        constant = (node[1],)
        return lambda inp, env: constant
    if kind == "var":
        if node[1] not in scope:
            raise _Refused(f"${node[1]} is not defined")
        name = node[1]
        return lambda inp, env: (env[name],)
    if kind in _COMPILERS:
        return _COMPILERS[kind](node, scope)
    raise _Refused(kind)


def _field(node: Node, scope: frozenset[Any]) -> Eval:
    source, key, optional = _compile(node[1], scope), node[2], node[3]

    def run(inp: Any, env: Env) -> Iterator[Any]:
        for value in source(inp, env):
            if isinstance(value, dict):
                found = value.get(key)
                yield jv.read(found) if type(found) is str and not found.isascii() else found
            elif value is None:
                yield None
            elif not optional:
                raise JqError("cannot index")

    if node[1] == ("id",):
        def direct(inp: Any, env: Env) -> tuple[Any, ...]:
            if isinstance(inp, dict):
                found = inp.get(key)
                return (jv.read(found) if type(found) is str and not found.isascii() else found,)
            if inp is None:
                return (None,)
            if optional:
                return ()
            raise JqError("cannot index")
        return direct
    return run


def _index_value(value: Any, key: Any) -> Any:
    if isinstance(key, str):
        if isinstance(value, dict):
            return jv.read(value.get(key))
        if value is None:
            return None
        raise JqError("cannot index")
    if type(key) is int:
        if isinstance(value, list):
            at = key + len(value) if key < 0 else key
            return jv.read(value[at]) if 0 <= at < len(value) else None
        if value is None:
            return None
        raise JqError("cannot index")
    raise GiveUp("index type")


def _index(node: Node, scope: frozenset[Any]) -> Eval:
    source, key, optional = _compile(node[1], scope), _compile(node[2], scope), node[3]

    def run(inp: Any, env: Env) -> Iterator[Any]:
        for k in key(inp, env):
            for value in source(inp, env):
                try:
                    yield _index_value(value, k)
                except JqError:
                    if not optional:
                        raise
    return run


def _slice(node: Node, scope: frozenset[Any]) -> Eval:
    source, optional = _compile(node[1], scope), node[4]
    low, high = (_compile(n, scope) if n is not None else None for n in node[2:4])

    def bounds(inp: Any, env: Env, part: Eval | None) -> Iterable[Any]:
        return (None,) if part is None else part(inp, env)

    def run(inp: Any, env: Env) -> Iterator[Any]:
        for lo in bounds(inp, env, low):
            for hi in bounds(inp, env, high):
                if any(b is not None and type(b) is not int for b in (lo, hi)):
                    raise GiveUp("slice bounds")
                for value in source(inp, env):
                    if value is None or isinstance(value, (list, str)):
                        yield None if value is None else value[lo:hi]
                    elif not optional:
                        raise JqError("cannot slice")
    return run


def _iterate(node: Node, scope: frozenset[Any]) -> Eval:
    source, optional = _compile(node[1], scope), node[2]

    def run(inp: Any, env: Env) -> Iterator[Any]:
        for value in source(inp, env):
            if isinstance(value, list):
                yield from map(jv.read, value)
            elif isinstance(value, dict):
                yield from (jv.read(value[k]) for k in jv.iteration_keys(value))
            elif not optional:
                raise JqError("cannot iterate")
    return run


def _try(node: Node, scope: frozenset[Any]) -> Eval:
    body = _compile(node[1], scope)

    def run(inp: Any, env: Env) -> Iterator[Any]:
        try:
            yield from body(inp, env)
        except JqError:
            return
    return run


def _pipe(node: Node, scope: frozenset[Any]) -> Eval:
    left, right = _compile(node[1], scope), _compile(node[2], scope)
    return lambda inp, env: (out for value in left(inp, env) for out in right(value, env))


def _comma(node: Node, scope: frozenset[Any]) -> Eval:
    left, right = _compile(node[1], scope), _compile(node[2], scope)

    def run(inp: Any, env: Env) -> Iterator[Any]:
        yield from left(inp, env)
        yield from right(inp, env)
    return run


def _alternative(node: Node, scope: frozenset[Any]) -> Eval:
    left, right = _compile(node[1], scope), _compile(node[2], scope)

    def run(inp: Any, env: Env) -> Iterator[Any]:
        found = False
        for value in left(inp, env):  # jq 1.7+: an error of the left side is not suppressed
            if truthy(value):
                found = True
                yield value
        if not found:
            yield from right(inp, env)
    return run


def _logic(node: Node, scope: frozenset[Any]) -> Eval:
    left, right, conjunction = _compile(node[1], scope), _compile(node[2], scope), node[0] == "and"

    def run(inp: Any, env: Env) -> Iterator[Any]:
        for a in left(inp, env):
            if truthy(a) != conjunction:
                yield not conjunction
            else:
                for b in right(inp, env):
                    yield truthy(b)
    return run


_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "==": jv.equal, "!=": lambda a, b: not jv.equal(a, b),
    "<": lambda a, b: jv.compare(a, b) < 0, "<=": lambda a, b: jv.compare(a, b) <= 0,
    ">": lambda a, b: jv.compare(a, b) > 0, ">=": lambda a, b: jv.compare(a, b) >= 0,
    "+": jv.add, "-": lambda a, b: jv.arithmetic("-", a, b), "*": lambda a, b: jv.arithmetic("*", a, b),
    "/": lambda a, b: jv.arithmetic("/", a, b),
}


def _binop(node: Node, scope: frozenset[Any]) -> Eval:
    if node[1] not in _BINARY:
        raise _Refused(node[1])
    op, left, right = _BINARY[node[1]], _compile(node[2], scope), _compile(node[3], scope)
    # jq evaluates the right operand in the outer loop: [(1,2) + (10,20)] is [11,12,21,22]
    return lambda inp, env: (op(a, b) for b in right(inp, env) for a in left(inp, env))


def _conditional(node: Node, scope: frozenset[Any]) -> Eval:
    cond, then, otherwise = (_compile(n, scope) for n in node[1:4])
    return lambda inp, env: (out for c in cond(inp, env) for out in (then if truthy(c) else otherwise)(inp, env))


def _array(node: Node, scope: frozenset[Any]) -> Eval:
    if node[1] is None:
        return lambda inp, env: (Array(),)
    body = _compile(node[1], scope)
    return lambda inp, env: (Array(jv.element(v) for v in body(inp, env)),)


def _object(node: Node, scope: frozenset[Any]) -> Eval:
    entries = [(_compile(k, scope), _compile(v, scope)) for k, v in node[1]]

    def build(inp: Any, env: Env, at: int, pairs: list[tuple[str, Any]]) -> Iterator[Any]:
        if at == len(entries):
            yield Object(pairs)
            return
        key, value = entries[at]
        for k in key(inp, env):  # the first entry, and a key before its value, in the outer loop
            if not isinstance(k, str):
                raise JqError("object keys must be strings")
            for v in value(inp, env):
                yield from build(inp, env, at + 1, [*pairs, (k, jv.element(v))])
    return lambda inp, env: build(inp, env, 0, [])


def _interpolation(node: Node, scope: frozenset[Any]) -> Eval:
    parts = [p if isinstance(p, str) else _compile(p, scope) for p in node[1]]

    def strings(inp: Any, env: Env, upto: int) -> Iterator[str]:
        """The texts of ``parts[:upto]``; a later interpolation runs in the outer loop (jq)."""
        if upto == 0:
            yield ""
            return
        part = parts[upto - 1]
        for text in ((part,) if isinstance(part, str) else map(jv.tostring, part(inp, env))):
            for head in strings(inp, env, upto - 1):
                yield head + text
    return lambda inp, env: strings(inp, env, len(parts))


def _bind(node: Node, scope: frozenset[Any]) -> Eval:
    source, name = _compile(node[1], scope), node[2]
    body = _compile(node[3], scope | {name})
    return lambda inp, env: (out for v in source(inp, env) for out in body(inp, {**env, name: v}))


def _definition(node: Node, scope: frozenset[Any]) -> Eval:
    _, name, params, body_node, rest_node = node
    key = (name, len(params))
    inner = (scope - {key}) | {("self", *key)} | set(params)
    body, rest = _compile(body_node, inner), _compile(rest_node, scope | {key})
    return lambda inp, env: rest(inp, {**env, key: (body, params, env)})


def _call(node: Node, scope: frozenset[Any]) -> Eval:
    name, args = node[1], node[2]
    key = (name, len(args))
    if ("self", *key) in scope:
        raise _Refused("recursive function")
    compiled = [_compile(a, scope) for a in args]
    if key in scope:
        return _user_call(key, compiled)
    if key not in _BUILTINS:
        raise _Refused(f"{name}/{len(args)}")
    return _BUILTINS[key](*compiled)


def _user_call(key: tuple[str, int], args: list[Eval]) -> Eval:
    def run(inp: Any, env: Env) -> Iterator[Any]:
        body, params, closure = env[key]
        yield from bind(inp, env, body, params, closure, 0)

    def bind(inp: Any, env: Env, body: Eval, params: tuple[str, ...], bound: Env, at: int) -> Iterator[Any]:
        if at == len(params):
            yield from body(inp, bound)
            return
        for value in args[at](inp, env):  # `def f($a; $b)` is `def f(a; b): a as $a | b as $b | ...`
            yield from bind(inp, env, body, params, {**bound, params[at]: value}, at + 1)
    return run


_COMPILERS: dict[str, Callable[[Node, frozenset[Any]], Eval]] = {
    "field": _field, "index": _index, "slice": _slice, "iter": _iterate, "try": _try, "pipe": _pipe,
    "comma": _comma, "alt": _alternative, "and": _logic, "or": _logic, "binop": _binop, "if": _conditional,
    "array": _array, "object": _object, "str": _interpolation, "bind": _bind, "def": _definition, "call": _call,
}
