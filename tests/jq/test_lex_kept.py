"""The lexer's kept tokens (``workload_map.jq.static.lex``): the same answer as a fresh lex, never shared."""

from __future__ import annotations

import sys

from workload_map.jq import static
from workload_map.jq.static import LEXED_CHARS, TOO_DEEP, lex


def test_kept_tokens_equal_a_fresh_lex_and_each_call_gets_its_own_list() -> None:
    source = '.spec.replicatedJobs[] | select(.name == "worker") | "\\(.name)-\\(.replicas)"'
    first = lex(source)
    assert first == static._lex(source, 0)[0]
    assert first[:4] == [("field", ".spec"), ("field", ".replicatedJobs"), ("op", "["), ("op", "]")]
    first.clear()  # a reader that changes its list changes nobody else's
    again = lex(source)
    assert again == static._lex(source, 0)[0] and again is not first and len(again) == 23


def test_a_long_source_is_lexed_each_time_and_not_kept() -> None:
    source = " + ".join(f".f{i}" for i in range(LEXED_CHARS // 5))  # over LEXED_CHARS characters
    assert len(source) > LEXED_CHARS
    before = static._lexed.cache_info().currsize
    tokens = lex(source)
    assert len(tokens) == 2 * (LEXED_CHARS // 5) - 1 and tokens[0] == ("field", ".f0")
    assert static._lexed.cache_info().currsize == before


def test_a_source_too_deep_for_the_stack_is_not_kept() -> None:
    # 300 nested interpolations (1,801 characters, short enough to be kept) lexed under a
    # recursion limit of 200 raise RecursionError: TOO_DEEP is that stack's answer only
    source = '"\\(' * 300 + "1" + ')"' * 300
    assert len(source) <= LEXED_CHARS
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)
    try:
        assert lex(source) == [TOO_DEEP]
    finally:
        sys.setrecursionlimit(limit)
    tokens = lex(source)  # with the usual limit: lexed now, not the earlier answer
    assert tokens[:3] == [("istart", ""), ("strpart", ""), ("op", "(")] and ("number", "1") in tokens
