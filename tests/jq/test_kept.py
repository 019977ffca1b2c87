"""The bounded program table (``workload_map.jq.kept.Kept``) and the engine's use of it."""

from __future__ import annotations

import pytest

from workload_map.jq import engine
from workload_map.jq.engine import PROGRAM_CACHE_CHARS, check_expression, compile_program
from workload_map.jq.kept import Kept


def test_what_is_used_again_survives_a_generation_and_the_rest_goes() -> None:
    kept = Kept(count=100, chars=20)
    kept.put("a", 1, 4)
    kept.put("b", 2, 4)
    assert kept.get("a") == 1
    kept.put("c", 3, 4)  # young: a b c = 12 > 10: it becomes the old generation
    assert len(kept) == 3 and kept.get("a") == 1  # promoted back into the young one
    kept.put("d", 4, 4)
    kept.put("e", 5, 4)  # young: a d e = 12: a swap, b and c (not used again) are dropped
    assert (kept.get("b"), kept.get("c")) == (None, None)
    assert [kept.get(k) for k in "ade"] == [1, 4, 5]
    assert kept.weight() <= 20 + 2 * 4  # each generation at most one entry over its half


def test_the_count_bounds_it_too() -> None:
    kept = Kept(count=10, chars=10**9)
    for i in range(1000):
        kept.put(i, i, 1)
    assert len(kept) <= 10 + 2 and kept.get(999) == 999


def test_long_expressions_cannot_pin_more_than_the_character_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    # 8,192 programs of long C-only expressions pinned gigabytes (a fresh-user trial: 0.3 MB each);
    # the engine's table with a budget of 100,000 characters instead of PROGRAM_CACHE_CHARS
    budget, length = 100_000, 5_000
    monkeypatch.setattr(engine, "_PROGRAMS", Kept(engine.PROGRAM_CACHE_SIZE, budget))
    for i in range(2 * budget // length):
        expression = f".f{i:06d} | tojson | " + " + ".join(["ascii_downcase"] * ((length - 30) // 17))
        assert check_expression(expression) == [] and compile_program(expression).fast is None
    assert budget // 2 < engine._PROGRAMS.weight() <= budget + 2 * length
    assert len(engine._PROGRAMS) <= budget // 4_000
    program = compile_program(".spec.replicas")
    assert compile_program(".spec.replicas") is program  # a short one is kept as ever
    assert PROGRAM_CACHE_CHARS == 2_000_000 and engine._BATCHES.chars == PROGRAM_CACHE_CHARS
