"""The fields of its input a jq expression can read: a conservative static analysis.

``expression_reads(expression)`` gives a set of *read paths* (tuples of object keys): the
expression's outputs depend only on the subtrees of its input at those paths. ``None``
means "cannot tell": the caller must assume the whole input is read. The empty tuple ``()``
is the whole input (``. as $root``, a bare ``.``).

Two forms are analysed, anything else is ``None``:

* plain navigation (``workload_map.jq.fastpath.navigation_paths`` of the one parser,
  ``workload_map.jq.parse``: ``.a.b["c"] // .d // 1``): each alternative's path up to its
  first index or iteration;
* a pipeline ``S1 | S2 | ...`` (split at the top level only) where each stage that still
  receives the input itself is one of: a navigation path (it reads that subtree; later
  stages receive a part of it, so whatever they do reads nothing else of the input),
  ``path as $v`` (reads the path; jq gives the next stage the same input), or a stage that
  does not touch its input at all (variables, literals, operators, ``if``/``then``/``else``
  only: ``$l["k"] != null``), with or without ``as $v``. Example:
  ``.metadata.labels as $l | .metadata.name | ltrimstr($l["w"])`` reads
  ``metadata.labels`` and ``metadata.name``.

Why this is sound: jq has no way to reach the program's input from a stage that receives
something else, except through variables, and variables are bound only by the stages
analysed above (``$ENV``, ``input`` and friends are refused by ``workload_map.jq.static``).
Any builtin called without arguments reads ``.`` (``length``, ``keys``, ``tojson``), so an
identifier other than the keywords below makes a stage "touching its input"; a definition
(``def``), ``reduce``, ``try``, ``label``, object shorthand (``{a}``) or format (``@csv``)
in a stage that receives the input gives ``None``.
"""

from __future__ import annotations


from workload_map.jq.fastpath import navigation_paths
from workload_map.jq.parse import parse
from workload_map.jq.static import UNDECODABLE, Token, lex

ReadPath = tuple[str, ...]

#: Identifiers that do not read the input by themselves.
_INERT = frozenset({"if", "then", "elif", "else", "end", "and", "or", "null", "true", "false"})
_OPEN, _CLOSE = frozenset("([{"), frozenset(")]}")



class _Unknown(Exception):
    """The expression is outside the analysed forms."""


def _tokens(expression: str) -> list[Token]:
    """The expression's tokens (``workload_map.jq.static.lex``).

    Raises:
        _Unknown: a character outside jq's syntax, an unterminated string or interpolation,
            or a string whose escapes do not decode.
    """
    tokens = lex(expression)
    if any(kind == "unknown" or (kind in ("string", "strpart") and value == UNDECODABLE) for kind, value in tokens):
        raise _Unknown("not analysable")
    return tokens


def _stages(tokens: list[Token]) -> list[list[Token]]:
    """``tokens`` split at the pipes outside brackets and ``if ... end``."""
    stages: list[list[Token]] = [[]]
    depth = 0
    for kind, value in tokens:
        if kind == "op" and value in _OPEN or (kind, value) == ("ident", "if"):
            depth += 1
        elif kind == "op" and value in _CLOSE or (kind, value) == ("ident", "end"):
            depth -= 1
        if depth == 0 and (kind, value) == ("op", "|"):
            stages.append([])
        else:
            stages[-1].append((kind, value))
    return stages


def _path(tokens: list[Token]) -> ReadPath | None:
    """The read path of a navigation stage (keys up to the first index/iteration), or None."""
    if tokens == [("op", ".")]:
        return ()
    if not tokens:
        return None
    keys: list[str] = []
    exact, index = True, 0
    if tokens[0] == ("op", "."):  # `."k"`, `.["k"]`, `.[0]`, `.[]`
        if len(tokens) > 1 and tokens[1][0] == "string":
            keys.append(tokens[1][1])
            index = 2
        elif tokens[1:2] == [("op", "[")]:
            index = 1
        else:
            return None
    elif tokens[0][0] != "field":
        return None
    while index < len(tokens):
        kind, value = tokens[index]
        key: str | None
        if kind == "field":
            key, index = value[1:], index + 1
        elif (kind, value) == ("op", "["):
            inner = tokens[index + 1:index + 3]
            if inner[:1] == [("op", "]")]:
                key, index = None, index + 2
            elif len(inner) == 2 and inner[0][0] in ("string", "number") and inner[1] == ("op", "]"):
                key, index = (inner[0][1] if inner[0][0] == "string" else None), index + 3
            else:
                return None
        else:
            return None
        if key is None:
            exact = False
        elif exact:
            keys.append(key)
    return tuple(keys)


def _inert(tokens: list[Token]) -> bool:
    """True when the stage never reads its input (see module docstring)."""
    for kind, value in tokens:
        if kind in ("field", "format") or (kind == "op" and value in (".", "..")):
            return False
        if kind == "ident" and value not in _INERT:
            return False
    return True


def _pipeline_reads(tokens: list[Token]) -> set[ReadPath]:
    reads: set[ReadPath] = set()
    for stage in _stages(tokens):
        binds = len(stage) >= 2 and stage[-2] == ("ident", "as") and stage[-1][0] == "var"
        body = stage[:-2] if binds else stage
        if not binds and any(t == ("ident", "as") for t in stage):
            raise _Unknown("destructuring")
        path = _path(body)
        if path is not None:
            reads.add(path)
        elif not _inert(body):
            raise _Unknown("stage")
        if not binds:
            return reads  # later stages receive a part of what was read (or no part of the input)
    raise _Unknown("a pipeline ending in a binding")


def expression_reads(expression: str) -> frozenset[ReadPath] | None:
    """The read paths of ``expression`` (module docstring), or None for "the whole input"."""
    tree = parse(expression)
    alternatives = None if tree is None else navigation_paths(tree)
    if alternatives is not None:
        out: set[ReadPath] = set()
        for steps in alternatives:
            keys: list[str] = []
            for step in steps:
                if step[0] != "field":  # an index or iteration ends the exact path
                    break
                keys.append(step[1])
            out.add(tuple(keys))
        return frozenset(out)
    try:
        tokens = _tokens(expression)
        return frozenset(_pipeline_reads(tokens)) if tokens else None
    except _Unknown:
        return None
