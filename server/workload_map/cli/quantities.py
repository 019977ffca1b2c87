"""CPU and memory figures for the terminal, in Kubernetes quantity notation.

CPU: whole cores as ``4``, else millicores ``500m`` (``20000m`` prints ``20``, as upstream
``kli describe``). Memory (bytes): binary suffix (``Ki``..``Ti``) when exact, else decimal
(``k``..``T``) when exact, else bytes. Source: the Kubernetes quantity format,
https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/quantity/
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

BINARY = (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
DECIMAL = (("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3))


def cpu(cores: Decimal) -> str:
    """``4``, ``1500m``; sub-millicore amounts round up to ``1m``."""
    if cores == cores.to_integral_value():
        return str(int(cores))
    millis = (cores * 1000).to_integral_value(rounding="ROUND_CEILING")
    return f"{int(millis)}m"


def memory(amount: Decimal) -> str:
    """``8Gi``, ``500M``, ``1234`` (bytes)."""
    whole = int(amount.to_integral_value(rounding="ROUND_CEILING"))
    for suffixes in (BINARY, DECIMAL):
        for suffix, size in suffixes:
            if whole >= size and whole % size == 0:
                return f"{whole // size}{suffix}"
    return str(whole)


def cpu_memory(requests: Mapping[str, Any]) -> str:
    """``cpu: 2, mem: 8Gi`` for the figures present ("" when neither is requested)."""
    parts = []
    if requests.get("cpu"):
        parts.append(f"cpu: {cpu(Decimal(requests['cpu']))}")
    if requests.get("memory"):
        parts.append(f"mem: {memory(Decimal(requests['memory']))}")
    return ", ".join(parts)
