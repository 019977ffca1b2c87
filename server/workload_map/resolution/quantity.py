"""Kubernetes resource quantities, parsed exactly as Decimals.

Rules from the Kubernetes API reference, "Quantity" (k8s.io/apimachinery
``pkg/api/resource``): ``<sign><digits>[.<digits>]<suffix>`` where the suffix is a
binary SI suffix (``Ki Mi Gi Ti Pi Ei``), a decimal SI suffix (``n u m "" k M G T P E``)
or a decimal exponent (``e3``, ``E-2``: an integer after ``e``/``E``). A bare ``E`` is
the exa suffix (``1E`` is 10^18), not an exponent; ``1e`` has no meaning and is refused.
The whole string must match: no surrounding whitespace, no trailing newline. Numbers in
JSON (``4``) are accepted as-is. "No matter which of the three exponent forms is used, no
quantity may represent a number greater than 2^63-1 in magnitude" (the same reference): a
larger one (``"1e5000"``, 30 nines, a JSON ``1e308``) is refused as out of range rather than
carried into sums, where it became an infinite float in every GPU figure it reached.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
            "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
            "P": Decimal("1e15"), "E": Decimal("1e18")}
_QUANTITY = re.compile(r"([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?",
                       re.ASCII)
#: Largest magnitude a quantity may represent (Kubernetes "Quantity", see the module docstring).
MAX_QUANTITY = Decimal(2**63 - 1)

#: Largest exponent magnitude accepted (the Go parser reads the exponent as a 32-bit int).
MAX_EXPONENT = 2**31 - 1


class QuantityError(ValueError):
    """A value is not a Kubernetes quantity; the message quotes it."""


def _shown(value: Any) -> str:
    """``repr(value)``, except for an integer too long to print (``sys.get_int_max_str_digits()``)."""
    if isinstance(value, int) and value.bit_length() > 14_000:  # about 4,200 decimal digits
        return f"<an integer of about {int(value.bit_length() * 0.30103):,} digits>"
    return repr(value)


def parse_quantity(value: Any) -> Decimal:
    """The numeric value of a quantity (``"500m"`` -> ``Decimal("0.5")``, ``"1Ki"`` -> 1024).

    Raises:
        QuantityError: not a number or quantity string, or beyond ``MAX_QUANTITY`` in magnitude.
    """
    number = _parse(value)
    if abs(number) > MAX_QUANTITY:
        raise QuantityError(f"invalid quantity {_shown(value)}: beyond 2^63-1, the largest quantity Kubernetes represents")
    return number


def _parse(value: Any) -> Decimal:
    if isinstance(value, bool):
        raise QuantityError(f"invalid quantity {_shown(value)}")
    if isinstance(value, (int, float)):
        number = Decimal(value) if isinstance(value, int) else Decimal(str(value))  # an int exactly, any length
        if not number.is_finite():
            raise QuantityError(f"invalid quantity {_shown(value)}")
        return number
    if not isinstance(value, str):
        raise QuantityError(f"invalid quantity {_shown(value)}")
    match = _QUANTITY.fullmatch(value)
    if match is None:
        raise QuantityError(f"invalid quantity {_shown(value)}")
    digits, suffix = match.group(1), match.group(2) or ""
    try:
        base = Decimal(digits)
        if suffix in _BINARY:
            return base * _BINARY[suffix]
        if suffix in _DECIMAL:
            return base * _DECIMAL[suffix]
        exponent = int(suffix[1:])
        if abs(exponent) > MAX_EXPONENT:
            raise QuantityError(f"invalid quantity {_shown(value)}: exponent out of range")
        return base.scaleb(exponent)
    except ArithmeticError:  # InvalidOperation, Overflow: beyond what Decimal represents
        raise QuantityError(f"invalid quantity {_shown(value)}: out of range") from None


def format_quantity(value: Decimal) -> str:
    """A compact decimal string for a parsed quantity (``Decimal("0.500")`` -> ``"0.5"``)."""
    normalized = value.normalize()
    if normalized == normalized.to_integral_value():
        return str(int(normalized))
    return format(normalized, "f")
