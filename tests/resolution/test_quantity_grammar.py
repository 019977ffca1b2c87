"""The Kubernetes quantity grammar, exactly (k8s.io/apimachinery ``pkg/api/resource``).

Our own table, written from the grammar in the Quantity documentation and the kinds of
cases apimachinery's quantity tests cover (decimal SI, binary SI, exponents, odd but legal
spellings, refused spellings). Values are worked out by hand in the comments.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from workload_map.resolution.quantity import QuantityError, parse_quantity
from workload_map.resolution.resources import effective_pod_requests

VALID = [
    # decimal SI suffixes
    ("0", Decimal(0)), ("7", Decimal(7)), ("250m", Decimal("0.25")), ("3n", Decimal("3e-9")),
    ("5u", Decimal("5e-6")), ("2k", Decimal(2000)), ("1.5M", Decimal(1_500_000)), ("4G", Decimal(4 * 10**9)),
    ("2T", Decimal(2 * 10**12)), ("3P", Decimal(3 * 10**15)),
    ("1E", Decimal(10**18)),           # E alone is exa, not an exponent
    ("1.5E", Decimal(15 * 10**17)),    # 1.5 * 10^18
    # binary SI suffixes
    ("1Ki", Decimal(1024)), ("0.5Mi", Decimal(524_288)),   # 2^20 / 2
    ("3Gi", Decimal(3 * 2**30)), ("1Ti", Decimal(2**40)), ("2Pi", Decimal(2**51)), ("1Ei", Decimal(2**60)),
    # decimal exponents: an integer after e/E, optionally signed
    ("1e3", Decimal(1000)), ("1E3", Decimal(1000)), ("2e-3", Decimal("0.002")), ("5E+2", Decimal(500)),
    ("0.5e-2", Decimal("0.005")),
    # signs and odd but legal spellings
    ("+12", Decimal(12)), ("-4", Decimal(-4)), (".5", Decimal("0.5")), ("1.", Decimal(1)),
    ("1.G", Decimal(10**9)), (".001", Decimal("0.001")), (".0001k", Decimal("0.1")), ("007", Decimal(7)),
    ("+.5Ki", Decimal(512)),
    # JSON numbers are taken as they are
    (4, Decimal(4)), (0.5, Decimal("0.5")),
]

INVALID = [
    "", " 1", "1 ", "1\n", "1Gi\n",   # surrounding whitespace, trailing newline ($ would let it pass)
    "1e", "5E-", "-3.01e-", "1e1.5",   # an exponent needs integer digits
    "1.1.1", "1+1", "1.1.M", "0.1mi", "0.1am", "1i", ".5i", "1KI", "1ki", "1K",   # unknown suffixes
    ".", "+", "-", "e3", "Gi", "aoeu",   # no digits
    "\u0661",                            # an Arabic-Indic digit is not an ASCII digit
    "1e99999999999",                     # exponent beyond 32 bits
    True, None, [1], {"a": 1}, float("nan"), float("inf"),
]


@pytest.mark.parametrize("text, value", VALID)
def test_valid_quantities(text: object, value: Decimal) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", INVALID)
def test_invalid_quantities(text: object) -> None:
    with pytest.raises(QuantityError, match="invalid quantity"):
        parse_quantity(text)


def test_exa_gpu_request_resolves_instead_of_raising() -> None:
    # "1E" used to raise ValueError (int("")) inside the resolver; now it is 10^18
    result = effective_pod_requests({"containers": [{"name": "a", "resources": {"requests": {"cpu": "1E"}}}]})
    assert result.errors == [] and result.requests["cpu"] == Decimal(10**18)


def test_negative_extended_resource_is_refused_with_its_path() -> None:
    spec = {"containers": [{"name": "a", "resources": {"limits": {"nvidia.com/gpu": "-1"}}},
                           {"name": "b", "resources": {"requests": {"nvidia.com/gpu": "2\n"}}}]}
    result = effective_pod_requests(spec)
    assert result.requests == {}
    assert result.errors == ["containers[0].resources.limits.nvidia.com/gpu: quantity '-1' must not be negative",
                             "containers[1].resources.requests.nvidia.com/gpu: invalid quantity '2\\n'"]


@pytest.mark.parametrize("text", ["1e5000", "9" * 30, "9223372036854775808", "8Ei", "-8Ei", 1e308,
                                  pytest.param(10**5000, id="an-int-of-5001-digits"),
                                  "9.3E"])
def test_quantities_beyond_2_63_are_refused(text: object) -> None:
    # "no quantity may represent a number greater than 2^63-1 in magnitude" (Kubernetes Quantity);
    # 8Ei = 8 * 2^60 = 2^63, 9.3E = 9.3 * 10^18 > 9.22 * 10^18
    with pytest.raises(QuantityError, match="beyond 2\\^63-1, the largest quantity Kubernetes represents"):
        parse_quantity(text)


@pytest.mark.parametrize(("text", "value"), [("9223372036854775807", Decimal(2**63 - 1)), ("7Ei", Decimal(7 * 2**60)),
                                             ("-9223372036854775807", Decimal(-(2**63 - 1))), (2**63 - 1, Decimal(2**63 - 1))])
def test_quantities_up_to_2_63_minus_1_are_read(text: object, value: Decimal) -> None:
    assert parse_quantity(text) == value


def test_a_huge_gpu_request_counts_nothing_and_names_its_field() -> None:
    # before: 1e5000 GPUs summed into every figure (an infinite float in GraphQL, +Inf in /metrics,
    # a ValueError in the text output)
    result = effective_pod_requests({"containers": [
        {"name": "a", "resources": {"requests": {"nvidia.com/gpu": "1e5000", "cpu": "2"}}}]})
    assert result.requests == {"cpu": Decimal(2)}
    assert result.errors == ["containers[0].resources.requests.nvidia.com/gpu: invalid quantity '1e5000': "
                             "beyond 2^63-1, the largest quantity Kubernetes represents"]
