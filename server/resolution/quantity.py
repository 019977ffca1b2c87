"""Kubernetes resource quantities, parsed exactly as Decimals.

Rules from the Kubernetes API reference, "Quantity" (k8s.io/apimachinery
``pkg/api/resource``): ``<sign><digits>[.<digits>]<suffix>`` where the suffix is a
binary SI suffix (``Ki Mi Gi Ti Pi Ei``), a decimal SI suffix (``n u m "" k M G T P E``)
or a decimal exponent (``e3``, ``E-2``). Numbers in JSON (``4``) are accepted as-is.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
            "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
            "P": Decimal("1e15"), "E": Decimal("1e18")}
_QUANTITY = re.compile(r"^([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$",
                       re.ASCII)


class QuantityError(ValueError):
    """A value is not a Kubernetes quantity; the message quotes it."""


def parse_quantity(value: Any) -> Decimal:
    """The numeric value of a quantity (``"500m"`` -> ``Decimal("0.5")``, ``"1Ki"`` -> 1024).

    Raises:
        QuantityError: not a number or quantity string.
    """
    if isinstance(value, bool):
        raise QuantityError(f"invalid quantity {value!r}")
    if isinstance(value, (int, float)):
        number = Decimal(str(value))
        if not number.is_finite():
            raise QuantityError(f"invalid quantity {value!r}")
        return number
    if not isinstance(value, str):
        raise QuantityError(f"invalid quantity {value!r}")
    match = _QUANTITY.match(value)
    if match is None:
        raise QuantityError(f"invalid quantity {value!r}")
    digits, suffix = match.group(1), match.group(2) or ""
    try:
        base = Decimal(digits)
    except InvalidOperation:
        raise QuantityError(f"invalid quantity {value!r}") from None
    if suffix in _BINARY:
        return base * _BINARY[suffix]
    if suffix[:1] in ("e", "E"):
        return base.scaleb(int(suffix[1:]))
    return base * _DECIMAL[suffix]


def format_quantity(value: Decimal) -> str:
    """A compact decimal string for a parsed quantity (``Decimal("0.500")`` -> ``"0.5"``)."""
    normalized = value.normalize()
    if normalized == normalized.to_integral_value():
        return str(int(normalized))
    return format(normalized, "f")
