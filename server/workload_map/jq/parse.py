r"""A parser for the subset of jq that the pure-Python evaluator runs (``workload_map.jq.fastpath``).

It reads the tokens of the one jq lexer (:func:`workload_map.jq.static.lex`) and builds a
tree of tuples ``(kind, ...)``. Anything outside the subset (or not jq at all) gives
``None`` from :func:`parse`, and the expression stays with the C jq library, which also
reports every syntax error. Precedence and associativity follow jq's grammar (jq 1.7
``src/parser.y``), lowest first: ``def``/``as`` bodies, ``|`` (right), ``,`` (left),
``//`` (right), ``or``, ``and``, comparisons (non-associative), ``+ -``, ``* / %``, postfix
terms. ``Term as $x | body`` may start any operand; its body runs to the end of the
enclosing pipe, as in jq.

Nodes (``e`` an expression node)::

    ("id",)                          .
    ("lit", value)                   null, true, false, integers (``-1`` too), plain strings
    ("str", (part, ...))             "a\(e)b": parts are str or e
    ("field", e, key, opt)           e.key, e."key", e["key"] (opt: a ``?`` after it)
    ("index", e, k, opt)             e[k]  (k evaluated on the input of e, as in jq)
    ("slice", e, lo, hi, opt)        e[lo:hi]  (lo, hi: e or None)
    ("iter", e, opt)                 e[]
    ("try", e)                       e?   (any other term)
    ("pipe", a, b) ("comma", a, b) ("alt", a, b) ("and", a, b) ("or", a, b)
    ("binop", op, a, b)              op in + - * / % == != < <= > >=
    ("if", cond, then, else)         else is ("id",) when absent
    ("array", e | None) ("object", ((key_e, value_e), ...))
    ("var", name) ("bind", source, name, body)
    ("call", name, (arg, ...))       builtins and ``def`` functions
    ("def", name, (param, ...), body, rest)   params are ``$`` names only
"""

from __future__ import annotations

from typing import Any

from workload_map.jq.static import UNDECODABLE, Token, lex

Node = tuple[Any, ...]

_CMP = frozenset({"==", "!=", "<", "<=", ">", ">="})
_KEYWORDS = frozenset({"def", "as", "if", "then", "elif", "else", "end", "and", "or", "reduce", "foreach", "try",
                       "catch", "label", "import", "include", "__loc__"})
_CONSTANTS = {"null": None, "true": True, "false": False}


class _Refused(Exception):
    """The source is outside the subset (or not valid jq)."""


def parse(expression: str) -> Node | None:
    """The tree of ``expression`` (module docstring), or ``None`` when outside the subset.

    Nesting deeper than Python's recursion limit (``((((...))))`` ten thousand deep) is
    outside the subset too: C jq then reports it itself (``memory exhausted``, a
    :class:`~workload_map.errors.JqCompileError` naming the field) instead of a
    ``RecursionError`` escaping registration.
    """
    try:
        tokens = lex(expression)
        if not tokens:
            return None
        parser = _Parser(tokens)
        node = parser.pipe()
        if parser.pos != len(tokens):
            return None
    except (_Refused, IndexError, RecursionError):
        return None
    return node


class _Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.pos = 0

    def peek(self, offset: int = 0) -> Token:
        at = self.pos + offset
        return self.tokens[at] if at < len(self.tokens) else ("eof", "")

    def take(self) -> Token:
        token = self.peek()
        if token[0] == "eof":
            raise _Refused("unexpected end")
        self.pos += 1
        return token

    def expect(self, kind: str, value: str) -> None:
        if self.take() != (kind, value):
            raise _Refused(f"expected {value}")

    def at(self, kind: str, value: str) -> bool:
        return self.peek() == (kind, value)

    def pipe(self) -> Node:
        if self.at("ident", "def"):
            return self.definition()
        left = self.comma()
        if self.at("op", "|"):
            self.take()
            return ("pipe", left, self.pipe())
        return left

    def definition(self) -> Node:
        self.take()
        kind, name = self.take()
        if kind != "ident" or name in _KEYWORDS:
            raise _Refused("def name")
        params: list[str] = []
        if self.at("op", "("):
            self.take()
            while True:
                kind, param = self.take()
                if kind != "var":
                    raise _Refused("only $ parameters")
                params.append(param[1:])
                if self.at("op", ";"):
                    self.take()
                    continue
                self.expect("op", ")")
                break
        self.expect("op", ":")
        body = self.pipe()
        self.expect("op", ";")
        return ("def", name, tuple(params), body, self.pipe())

    def comma(self) -> Node:
        node = self.alternative()
        while self.at("op", ","):
            self.take()
            node = ("comma", node, self.alternative())
        return node

    def alternative(self) -> Node:
        node = self.disjunction()
        if self.at("op", "//"):
            self.take()
            return ("alt", node, self.alternative())
        return node

    def disjunction(self) -> Node:
        node = self.conjunction()
        while self.at("ident", "or"):
            self.take()
            node = ("or", node, self.conjunction())
        return node

    def conjunction(self) -> Node:
        node = self.comparison()
        while self.at("ident", "and"):
            self.take()
            node = ("and", node, self.comparison())
        return node

    def comparison(self) -> Node:
        node = self.additive()
        kind, op = self.peek()
        if kind == "op" and op in _CMP:
            self.take()
            node = ("binop", op, node, self.additive())
            if self.peek()[0] == "op" and self.peek()[1] in _CMP:
                raise _Refused("comparisons do not chain")
        return node

    def additive(self) -> Node:
        node = self.multiplicative()
        while self.peek()[0] == "op" and self.peek()[1] in ("+", "-"):
            op = self.take()[1]
            node = ("binop", op, node, self.multiplicative())
        return node

    def multiplicative(self) -> Node:
        node = self.postfix()
        while self.peek()[0] == "op" and self.peek()[1] in ("*", "/", "%"):
            op = self.take()[1]
            node = ("binop", op, node, self.postfix())
        return node

    def postfix(self) -> Node:
        if self.at("ident", "def"):
            return self.definition()
        node = self.suffixes(self.primary())
        if self.at("ident", "as"):
            self.take()
            kind, name = self.take()
            if kind != "var":
                raise _Refused("destructuring")
            self.expect("op", "|")
            return ("bind", node, name[1:], self.pipe())
        return node

    def suffixes(self, node: Node) -> Node:
        while True:
            kind, value = self.peek()
            if kind == "field":
                self.take()
                node = ("field", node, value[1:], False)
            elif (kind, value) == ("op", ".") and self.peek(1)[0] == "string":
                self.take()
                node = ("field", node, self.string(), False)
            elif (kind, value) == ("op", ".") and self.peek(1) == ("op", "["):
                self.take()
            elif (kind, value) == ("op", "["):
                node = self.bracket(node)
            elif (kind, value) == ("op", "?"):
                self.take()
                node = (*node[:-1], True) if node[0] in ("field", "index", "slice", "iter") and not node[-1] else (
                    "try", node)
            else:
                return node

    def bracket(self, node: Node) -> Node:
        self.expect("op", "[")
        if self.at("op", "]"):
            self.take()
            return ("iter", node, False)
        low = None if self.at("op", ":") else self.pipe()
        if self.at("op", ":"):
            self.take()
            high = None if self.at("op", "]") else self.pipe()
            self.expect("op", "]")
            if low is None and high is None:
                raise _Refused("empty slice")
            return ("slice", node, low, high, False)
        self.expect("op", "]")
        assert low is not None
        if low[0] == "lit" and isinstance(low[1], str):
            return ("field", node, low[1], False)
        return ("index", node, low, False)

    def string(self) -> str:
        kind, value = self.take()
        if kind != "string" or value == UNDECODABLE:
            raise _Refused("string")
        return value

    def primary(self) -> Node:
        kind, value = self.peek()
        if kind == "field":
            return ("id",)
        if kind == "op":
            return self.punctuation(value)
        self.take()
        if kind == "string":
            if value == UNDECODABLE:
                raise _Refused("string")
            return ("lit", value)
        if kind == "number":
            if not value.isdigit():
                raise _Refused("only integer literals")  # jq keeps a literal's text: 1.0 | tostring is "1.0"
            return ("lit", int(value))
        if kind == "istart":
            return self.interpolation()
        if kind == "var":
            if value in ("$ENV", "$__loc__", "$__prog_args"):
                raise _Refused(value)
            return ("var", value[1:])
        if kind == "ident" and value == "if":
            return self.conditional()
        if kind == "ident" and value in _CONSTANTS:
            return ("lit", _CONSTANTS[value])
        if kind == "ident" and value not in _KEYWORDS:
            return ("call", value, self.arguments())
        raise _Refused(value)

    def punctuation(self, value: str) -> Node:
        if value == "-" and self.peek(1)[0] == "number" and self.peek(1)[1].isdigit():
            self.take()
            return ("lit", -int(self.take()[1]))  # `.[-1]`; unary minus on anything else is left to jq
        if value == ".":
            if self.peek(1)[0] == "string" or self.peek(1) == ("op", "["):
                return ("id",)
            self.take()
            return ("id",)
        self.take()
        if value == "(":
            node = self.pipe()
            self.expect("op", ")")
            return node
        if value == "[":
            if self.at("op", "]"):
                self.take()
                return ("array", None)
            node = self.pipe()
            self.expect("op", "]")
            return ("array", node)
        if value == "{":
            return self.object()
        raise _Refused(value)

    def interpolation(self) -> Node:
        parts: list[Any] = []
        while True:
            kind, value = self.take()
            if kind == "istring":
                return ("str", tuple(p for p in parts if p != ""))
            if kind == "strpart":
                if value == UNDECODABLE:
                    raise _Refused("string")
                parts.append(value)
            elif (kind, value) == ("op", "("):
                parts.append(self.pipe())
                self.expect("op", ")")
            else:
                raise _Refused("interpolation")

    def arguments(self) -> tuple[Node, ...]:
        if not self.at("op", "("):
            return ()
        self.take()
        args = [self.pipe()]
        while self.at("op", ";"):
            self.take()
            args.append(self.pipe())
        self.expect("op", ")")
        return tuple(args)

    def conditional(self) -> Node:
        cond = self.pipe()
        self.expect("ident", "then")
        then = self.pipe()
        if self.at("ident", "elif"):
            self.take()
            return ("if", cond, then, self.conditional())
        otherwise: Node = ("id",)
        if self.at("ident", "else"):
            self.take()
            otherwise = self.pipe()
        self.expect("ident", "end")
        return ("if", cond, then, otherwise)

    def object(self) -> Node:
        entries: list[tuple[Node, Node]] = []
        while not self.at("op", "}"):
            kind, value = self.take()
            if kind in ("ident", "string") and value != UNDECODABLE:
                key: Node = ("lit", value)
            elif (kind, value) == ("op", "("):
                key = self.pipe()
                self.expect("op", ")")
                if key[0] == "lit" and not isinstance(key[1], str):
                    raise _Refused("a constant key that is not a string")  # jq refuses it when compiling
            elif kind == "var" and value not in ("$ENV", "$__loc__", "$__prog_args") and not self.at("op", ":"):
                entries.append((("lit", value[1:]), ("var", value[1:])))
                key = ()
            else:
                raise _Refused("object key")
            if key:
                if not self.at("op", ":"):
                    if key[0] != "lit":
                        raise _Refused("object key")
                    entries.append((key, ("field", ("id",), key[1], False)))
                else:
                    self.take()
                    entries.append((key, self.object_value()))
            if not self.at("op", ","):
                break
            self.take()
        self.expect("op", "}")
        return ("object", tuple(entries))

    def object_value(self) -> Node:
        """Jq's ``ExpD``: terms joined by ``|`` (``{a: 1 + 2}`` is a syntax error in jq)."""
        node = self.suffixes(self.primary())
        if self.at("op", "|"):
            self.take()
            return ("pipe", node, self.object_value())
        return node
