"""jq's value semantics in Python: order, truth, arithmetic and number text (jq 1.7/1.8).

Values are the Python form of JSON (``None``, ``bool``, ``int``, ``float``, ``str``,
``list``, ``dict``) with two marks the pure evaluator (``workload_map.jq.fastpath``) needs to
print numbers as jq does:

* :class:`Double`, a float computed by arithmetic: jq prints it in the shortest form
  that reads back (``1e-05``, ``1e+16``, ``3``; ``jvp_dtoa_fmt``);
* numbers of the input keep the text of their JSON literal, which jq prints in decNumber's
  scientific form (``1.1e-05`` -> ``0.000011``, ``1e16`` -> ``1E+16``): Python's
  ``decimal`` implements the same specification (General Decimal Arithmetic).

Objects an expression builds are :class:`Object` (jq keeps their insertion order), arrays
:class:`Array`; objects of the input are plain dicts, which jq sees with sorted keys
(``Document.text``).

:class:`GiveUp` means "not sure to match jq here" (the caller runs C jq); :class:`JqError`
means jq certainly raises here (a ``?`` suppresses it; uncaught, the caller runs C jq for
jq's own message).
"""

from __future__ import annotations

import math
import re
import sys
from decimal import Decimal
from typing import Any

#: Integers beyond this lose precision in jq's doubles; such cases are left to C jq.
SAFE_INTEGER = 2 ** 53

#: What C jq prints (and the binding hands back) for +infinity: the largest double.
DOUBLE_MAX = sys.float_info.max

_SURROGATE = re.compile("[\ud800-\udfff]")


class GiveUp(Exception):
    """The pure evaluator cannot promise jq's exact result for this input."""


class JqError(Exception):
    """jq raises an error here (its message is left to C jq)."""


class Double(float):
    """A number computed by jq arithmetic (a C double, printed in shortest form)."""

    __slots__ = ()


class Literal(float):
    """A number read from text (``tonumber``), printed as jq prints that literal.

    Attributes:
        text: decNumber's scientific string of the literal (``"1.50"``, ``"1E+3"``).
    """

    __slots__ = ("text",)
    text: str


class Object(dict[str, Any]):
    """An object built by the expression: jq iterates it in insertion order."""

    __slots__ = ()


class Array(list[Any]):
    """An array built by the expression (its numbers are handed back as the binding gives them)."""

    __slots__ = ()


def has_surrogate(text: str) -> bool:
    r"""True when ``text`` holds a UTF-16 surrogate code point (U+D800..U+DFFF).

    Python's ``json`` and YAML decode a ``\uD800`` escape to one; C jq refuses the text
    with a lone high half and reads a lone low half as U+FFFD, so the pure path gives up.
    """
    return not text.isascii() and _SURROGATE.search(text) is not None


def read(value: Any) -> Any:
    """``value`` as read from the input: a string holding a surrogate gives up (:func:`has_surrogate`)."""
    if type(value) is str and has_surrogate(value):
        raise GiveUp("surrogate in a string")
    return value


def irregular(value: Any) -> bool:
    """True when an input subtree holds what C jq reads differently from its Python value.

    A non-finite float (``NaN``, ``Infinity`` from a JSON body, YAML ``.nan``/``.inf``: jq
    prints null and +-1.7976931348623157e+308) or a surrogate in a string or key.
    """
    if isinstance(value, dict):
        return any(not k.isascii() and _SURROGATE.search(k) is not None for k in value) \
            or any(_irregular_item(v) for v in value.values())
    if isinstance(value, list):
        return any(_irregular_item(v) for v in value)
    return _irregular_item(value)


def _irregular_item(value: Any) -> bool:
    kind_ = type(value)
    if kind_ is str:
        return not value.isascii() and _SURROGATE.search(value) is not None
    if kind_ is float:
        return not math.isfinite(value)
    return isinstance(value, (dict, list)) and irregular(value)


def truthy(value: Any) -> bool:
    """Jq's truth: everything but ``null`` and ``false``."""
    return value is not None and value is not False


def kind(value: Any) -> int:
    """Jq's type rank: null 0, false 1, true 2, number 3, string 4, array 5, object 6."""
    if value is None:
        return 0
    if value is False:
        return 1
    if value is True:
        return 2
    if isinstance(value, (int, float)):
        return 3
    if isinstance(value, str):
        return 4
    if isinstance(value, list):
        return 5
    if isinstance(value, dict):
        return 6
    raise GiveUp("not a JSON value")


def number(value: Any) -> float | int:
    """``value`` as a number jq holds exactly (ints beyond 2**53 and non-finite floats give up)."""
    if isinstance(value, int):
        if -SAFE_INTEGER <= value <= SAFE_INTEGER:
            return value
        raise GiveUp("large integer")
    if not math.isfinite(value):
        raise GiveUp("non-finite")
    if value == 0 and type(value) is float:
        return 0.0  # an input -0.0 is written "0" by Document.text, so C jq reads +0
    return float(value)


def compare(a: Any, b: Any) -> int:
    """Jq's total order (``jv_cmp``): -1, 0 or 1.

    Types rank as in :func:`kind`; arrays compare element-wise, then by length; objects
    by their sorted key lists first, then by the values of those keys in order.
    """
    ka, kb = kind(a), kind(b)
    if ka != kb:
        return -1 if ka < kb else 1
    if ka == 3:
        x, y = number(a), number(b)
        return (x > y) - (x < y)
    if ka == 4:
        return int(a > b) - int(a < b)
    if ka == 5:
        for x, y in zip(a, b):
            c = compare(x, y)
            if c:
                return c
        return (len(a) > len(b)) - (len(a) < len(b))
    if ka == 6:
        keys_a, keys_b = sorted(a), sorted(b)
        if keys_a != keys_b:
            return -1 if keys_a < keys_b else 1
        for key in keys_a:
            c = compare(a[key], b[key])
            if c:
                return c
    return 0


def equal(a: Any, b: Any) -> bool:
    """Jq's ``==``."""
    if type(a) is str and type(b) is str:
        return a == b
    return compare(a, b) == 0


def add(a: Any, b: Any) -> Any:
    """Jq's ``a + b``: null is the identity; numbers, strings, arrays, objects (right wins)."""
    if a is None:
        return b
    if b is None:
        return a
    ka, kb = kind(a), kind(b)
    if ka == kb == 3:
        return Double(float(number(a)) + float(number(b)))
    if ka == kb == 4:
        return a + b
    if ka == kb == 5:
        return Array(a + b)
    if ka == kb == 6:
        merged = Object()
        for key in iteration_keys(a):
            merged[key] = a[key]
        for key in iteration_keys(b):
            merged[key] = b[key]
        return merged
    raise JqError("cannot be added")


def arithmetic(op: str, a: Any, b: Any) -> Any:
    """Jq's ``- * /`` on numbers (other operand types are left to C jq)."""
    if kind(a) != 3 or kind(b) != 3:
        if op == "-" and kind(a) == 5 and kind(b) == 5:
            return Array(x for x in a if not any(equal(x, y) for y in b))
        raise GiveUp(f"{op} on non-numbers")
    x, y = float(number(a)), float(number(b))
    if op == "-":
        return Double(x - y)
    if op == "*":
        return Double(x * y)
    if op == "/":
        if y == 0:
            raise JqError("division by zero")
        return Double(x / y)
    raise GiveUp(op)


def iteration_keys(value: dict[str, Any]) -> list[str]:
    """The keys of an object in jq's order: sorted for the input, insertion for built ones."""
    return list(value) if type(value) is Object else sorted(value)


def tostring(value: Any) -> str:
    """Jq's ``tostring`` for strings, null, booleans and numbers (containers give up)."""
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, Double):
        return shortest(float(value))
    if isinstance(value, Literal):
        return value.text
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return input_float_text(value)
    raise GiveUp("tostring of a container")


def input_float_text(value: float) -> str:
    """How jq prints a float of the input document.

    ``Document.text`` writes integral floats as integers (``3.0`` -> ``3``) when the text
    holds ``.0``, which every such float below 1e16 does; larger integral floats depend on
    the rest of the document, so they give up.
    """
    if not math.isfinite(value):
        raise GiveUp("non-finite")
    if value.is_integer():
        if abs(value) >= 1e16:
            raise GiveUp("large integral float")
        return str(int(value))
    return str(Decimal(repr(value)))


def shortest(value: float) -> str:
    """Jq's text of a computed double: shortest round-trip digits, ``%.17g``-like layout.

    Exponent form when the decimal point is 4 or more places left of the first digit or
    more than 15 places right of the last (``jvp_dtoa_fmt``); the exponent has at least two
    digits (``1e-05``, ``1e+16``).
    """
    if not math.isfinite(value):
        raise GiveUp("non-finite")
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    sign, digits, exponent = Decimal(repr(value)).as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    point = len(digits) + int(exponent)  # decimal point position after the first digit run
    minus = "-" if sign else ""
    if point <= -4 or point > len(text) + 15:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        power = point - 1
        return f"{minus}{mantissa}e{'-' if power < 0 else '+'}{abs(power):02d}"
    if point <= 0:
        return f"{minus}0.{'0' * -point}{text}"
    if point >= len(text):
        return minus + text + "0" * (point - len(text))
    return f"{minus}{text[:point]}.{text[point:]}"


def output(value: Any) -> Any:
    """A value as the ``jq`` binding hands it back: integral numbers as ``int``.

    Arrays and objects the expression built are rebuilt as plain ones with their numbers
    handed back so; subtrees of the input are returned as they are unless
    :func:`irregular` (then C jq answers); an input ``NaN`` is ``None`` and an infinity
    +-:data:`DOUBLE_MAX`, as C jq prints them.

    Raises:
        GiveUp: a surrogate in a string, a computed non-finite number, an irregular subtree.
    """
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        return read(value)
    if type(value) is Object:
        return {read(k): output(v) for k, v in value.items()}
    if type(value) is Array:
        return [output(v) for v in value]
    if isinstance(value, (dict, list)):
        if irregular(value):
            raise GiveUp("non-finite number or surrogate in an input subtree")  # C jq answers
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            if type(value) is float:  # the input's own value, printed by jq as null or +-DBL_MAX
                return None if math.isnan(value) else math.copysign(DOUBLE_MAX, value)
            raise GiveUp("non-finite")
        return int(value) if value.is_integer() else float(value)
    if isinstance(value, int):
        return value if -SAFE_INTEGER <= value <= SAFE_INTEGER else int(float(value))
    return value


def element(value: Any) -> Any:
    """A value placed in a built array or object.

    Integral doubles become ints, as the binding would give them back; doubles that jq
    would print otherwise (beyond 1e16, ``-0``) stay marked.
    """
    if type(value) is Double and value.is_integer() and abs(value) < 1e16 and math.copysign(1.0, value) > 0:
        return int(value)
    return value
