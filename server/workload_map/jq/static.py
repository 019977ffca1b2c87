"""Static checks that keep dangerous jq constructs out of definitions.

A definition's paths only read. Upstream Karta rejects (docs/definition-format.md section 5):

* ``del`` -- ``del function is not allowed``;
* ``range``, ``paths``, ``recurse``, ``walk``, ``repeat`` --
  ``function '<name>' may produce excessive output and is not allowed``;
* ``..`` -- ``recursive descent operator '..' is not allowed``;
* ``=``, ``|=``, ``+=``, ``-=``, ``*=``, ``/=``, ``%=``, ``//=`` --
  ``modifying operator '<op>' is not allowed``.

Upstream's newer walker visits every node (function definitions, sub-queries, arrays,
objects, string interpolation, if/try/reduce/foreach). We get the same coverage by
lexing the whole expression, string interpolations included: a forbidden name in call
position is found wherever it is nested. Field access (``.range``), variables
(``$range``), object keys (``{range: 1}``, ``{range}``) and ``def`` names are not calls.
Parse errors come from compiling with jq itself (``workload_map.jq.engine.check_expression``).

Beyond upstream (a definition may be written by anyone allowed to create a Karta, and it
runs inside the server): ``env``/``$ENV`` (the server's environment, where credentials
live), ``input``/``inputs``/``debug``/``stderr``/``halt``/``halt_error`` and friends, and
``import``/``include`` are refused too.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator


EXCESSIVE = frozenset({"range", "paths", "recurse", "walk", "repeat"})
#: Beyond upstream: builtins that reach outside the object (the server's environment,
#: other inputs, stderr, the module search path) or stop the jq program.
OUTSIDE = frozenset({"env", "input", "inputs", "input_filename", "input_line_number", "debug", "stderr", "halt",
                     "halt_error", "get_search_list", "get_prog_origin", "get_jq_origin"})
MODIFYING = frozenset({"=", "|=", "+=", "-=", "*=", "/=", "%=", "//="})

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+|\#[^\n]*)
  | (?P<field>\.[A-Za-z_][A-Za-z0-9_]*)
  | (?P<var>\$[A-Za-z_][A-Za-z0-9_:]*)
  | (?P<format>@[A-Za-z0-9_]+)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*)
  | (?P<number>\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+)
  | (?P<op>\?//|//=|\|=|\+=|-=|\*=|/=|%=|==|!=|<=|>=|//|\.\.|[=|,+\-*/%<>.?:;\[\](){}])
    """,
    re.VERBOSE,
)


Token = tuple[str, str]
"""``(kind, value)``: kinds are the groups of ``_TOKEN``, ``string`` (value: the decoded
literal, or ``UNDECODABLE``), an interpolated string as ``istart``, then its literal
fragments (``strpart``, decoded like ``string``) alternating with its ``\\( ... )`` parts as
parenthesised tokens, then ``istring``, and ``unknown`` (a character outside jq's syntax, or an
unterminated string or interpolation)."""

UNDECODABLE = "\x00undecodable"
"""The value of a ``string`` token whose escapes do not decode."""
_SURROGATE = re.compile("[\ud800-\udfff]")
TOO_DEEP: Token = ("unknown", "\x00too deep")
"""The only token of a source nested deeper than the lexer's recursion can follow."""


def lex(text: str) -> list[Token]:
    """The tokens of jq source ``text`` (whitespace and comments left out); never raises.

    The one jq lexer: the pure-Python parser (:mod:`workload_map.jq.parse`), the static
    checks here and the read-path analysis (:mod:`workload_map.jq.reads`) all read its
    tokens, so checking one expression lexes it three or four times in a row: the tokens of
    the last :data:`LEXED_KEPT` sources of at most :data:`LEXED_CHARS` characters are kept
    (a new list each call; about 1.5 ms of a one-shot ``describe -f``). String interpolations nested deeper than Python's recursion
    limit give the single token :data:`TOO_DEEP`: no reader of the tokens understands it
    (:func:`forbidden_constructs` refuses it); that answer depends on the stack it was
    asked from, so it is not kept.
    """
    try:
        return list(_lexed(text)) if len(text) <= LEXED_CHARS else _lex(text, 0)[0]
    except RecursionError:  # raised through the cache: not kept
        return [TOO_DEEP]


LEXED_KEPT = 64
"""Sources whose tokens :func:`lex` keeps (least recently used dropped first): checking one
definition lexes each of its expressions a few times within a few dozen expressions."""
LEXED_CHARS = 2048
"""Longest source whose tokens are kept (the catalog's longest expression has 1,391
characters). A source has at most one token per character, so whatever is registered or
validated the kept tokens are at most 64 x 2,048 (about 14 MB at the measured 100 bytes a
token held; a fresh-user trial pinned 70 MB with 256 sources of 4,096)."""


@functools.lru_cache(maxsize=LEXED_KEPT)
def _lexed(text: str) -> tuple[Token, ...]:
    """The tokens of ``text``, kept (thread-safe); raises ``RecursionError`` as :func:`_lex`."""
    return tuple(_lex(text, 0)[0])


def _lex(text: str, pos: int, *, in_interp: bool = False) -> tuple[list[Token], int]:
    tokens: list[Token] = []
    depth = 0
    while pos < len(text):
        if text[pos] == '"':
            pos = _string(text, pos, tokens)
            continue
        if in_interp and text[pos] == ")" and depth == 0:
            return tokens, pos + 1
        match = _TOKEN.match(text, pos)
        if match is None:
            tokens.append(("unknown", text[pos]))
            pos += 1
            continue
        kind, value = match.lastgroup or "unknown", match.group()
        if kind != "ws":
            depth += (value == "(") - (value == ")")
            tokens.append((kind, value))
        pos = match.end()
    if in_interp:
        tokens.append(("unknown", ""))  # unterminated interpolation
    return tokens, pos


def _string(text: str, start: int, tokens: list[Token]) -> int:
    """Lex the string literal at ``text[start]`` (a quote) into ``tokens``; return its end."""
    pos, interpolated, first = start + 1, False, len(tokens)
    parts: list[str] = []
    while pos < len(text):
        if text.startswith("\\(", pos):
            tokens.append(("strpart", _decoded(parts)))
            inner, pos = _lex(text, pos + 2, in_interp=True)
            tokens.extend([("op", "("), *inner, ("op", ")")])
            interpolated, parts = True, []
        elif text[pos] == "\\":
            parts.append(text[pos:pos + 2])
            pos += 2
        elif text[pos] == '"':
            if interpolated:
                tokens.insert(first, ("istart", ""))
                tokens.extend([("strpart", _decoded(parts)), ("istring", "")])
            else:
                tokens.append(("string", _decoded(parts)))
            return pos + 1
        else:
            parts.append(text[pos])
            pos += 1
    tokens.append(("unknown", ""))  # unterminated string
    return pos


def _decoded(parts: list[str]) -> str:
    r"""The value of the literal characters ``parts`` of a string, or :data:`UNDECODABLE`.

    A ``\uXXXX`` escape of a lone surrogate half (U+D800..U+DFFF not in a pair) is
    undecodable here: C jq refuses a lone high half (``Invalid \uXXXX\uXXXX surrogate
    pair escape``) and turns a lone low half into U+FFFD, while ``json.loads`` keeps it.
    """
    try:
        value: str = json.loads('"' + "".join(parts) + '"')
    except ValueError:
        return UNDECODABLE
    if _SURROGATE.search(value):
        return UNDECODABLE
    return value


def forbidden_constructs(expression: str) -> list[str]:
    """Reasons for every forbidden construct in ``expression`` (empty when clean).

    Each reason uses upstream's wording, e.g. ``del function is not allowed``. A name is
    reported once per distinct reason, in order of first appearance.
    """
    tokens = lex(expression)
    if tokens == [TOO_DEEP]:
        return ["string interpolations are nested too deeply to check"]
    reasons: list[str] = []
    for _, kind, value, call in _walk(tokens):
        reason = None
        if kind == "op" and value == "..":
            reason = "recursive descent operator '..' is not allowed"
        elif kind == "op" and value in MODIFYING:
            reason = f"modifying operator '{value}' is not allowed"
        elif kind == "var" and value in ("$ENV", "$__prog_args"):
            reason = f"variable '{value}' reads the server's environment and is not allowed"
        elif kind == "ident" and value in ("import", "include"):
            reason = "modules (import/include) are not allowed"
        elif kind == "ident" and call:
            if value in OUTSIDE:
                reason = f"function '{value}' reaches outside the object and is not allowed"
            elif value == "del":
                reason = "del function is not allowed"
            elif value in EXCESSIVE:
                reason = f"function '{value}' may produce excessive output and is not allowed"
        if reason and reason not in reasons:
            reasons.append(reason)
    return reasons


def _walk(tokens: list[tuple[str, str]]) -> Iterator[tuple[int, str, str, bool]]:
    """``(index, kind, value, is a call)`` of every token; "is a call" only means anything for an ident.

    Brackets are tracked so that an identifier used as an object key (``{range: 1}``,
    ``{range}``) or named by ``def`` is not taken for a call of that builtin.
    """
    brackets: list[str] = []
    for index, (kind, value) in enumerate(tokens):
        prev = tokens[index - 1] if index else ("", "")
        nxt = tokens[index + 1] if index + 1 < len(tokens) else ("", "")
        if kind == "op" and value in "([{":
            brackets.append(value)
        elif kind == "op" and value in ")]}" and brackets:
            brackets.pop()
        yield index, kind, value, kind == "ident" and _is_call(prev, nxt, brackets)


def _is_call(prev: tuple[str, str], nxt: tuple[str, str], brackets: list[str]) -> bool:
    if prev == ("ident", "def"):
        return False
    if nxt == ("op", ":") and (not brackets or brackets[-1] == "{"):
        return False  # object key `{range: 1}`
    if brackets and brackets[-1] == "{" and prev in (("op", "{"), ("op", ",")) and nxt in (("op", ","), ("op", "}")):
        return False  # shorthand key `{range}`
    return True


#: Builtins whose running time is not bounded by the size of the input: loops and
#: recursion, and regular expressions (Oniguruma backtracks: a pattern can take
#: exponential time on a short string).
UNBOUNDED = frozenset({"until", "while", "repeat", "recurse", "recurse_down", "range", "walk", "paths", "leaf_paths",
                       "combinations", "test", "match", "capture", "scan", "split", "splits", "sub", "gsub"})


@functools.lru_cache(maxsize=8192)  # asked per expression per resolution (jq batches): memoized
def is_bounded(expression: str) -> bool:
    """True when evaluating ``expression`` takes time bounded by its input's size.

    That is: no recursive function (a ``def`` whose body names itself: jq's only way to
    recurse, as a function sees only itself and earlier definitions), no recursive
    descent ``..``, and no call of a builtin in :data:`UNBOUNDED` (``split`` is counted
    although its one-argument form takes a plain string: the lexer does not see arity).
    Every other jq construct (paths, pipes, ``if``, ``reduce``
    and ``foreach`` over a generator, arithmetic, comparisons, object and array
    construction, string interpolation) runs a number of steps bounded by a polynomial of
    the input's size, and the input is capped at ``MAX_INPUT_BYTES``. The one-shot CLI
    resolves definitions whose every expression is bounded in its own process, without
    the time budget of a worker process (``workload_map.materialization.inline``).
    """
    tokens = lex(expression)
    for index, kind, value, call in _walk(tokens):
        if (kind == "op" and value == "..") or kind == "unknown":
            return False
        if kind == "ident" and value == "def" and _is_recursive(tokens, index):
            return False
        if kind == "ident" and value in UNBOUNDED and call:
            return False
    return True


def _is_recursive(tokens: list[tuple[str, str]], at: int) -> bool:
    """True when the ``def`` at ``tokens[at]`` names itself in its body (up to its ``;``)."""
    name = tokens[at + 1][1] if at + 1 < len(tokens) else ""
    depth, inner, index = 0, 0, at + 2
    while index < len(tokens) and tokens[index] != ("op", ":"):
        index += 1  # the parameters
    for kind, value in tokens[index + 1:]:
        if kind == "op" and value in "([{":
            depth += 1
        elif kind == "op" and value in ")]}":
            depth -= 1
        elif kind == "ident" and value == "def":
            inner += 1
        elif kind == "op" and value == ";" and depth == 0:
            if not inner:
                return False
            inner -= 1
        elif kind == "ident" and value == name:
            return True
    return True  # no end found: not a definition jq accepts; do not call it bounded
