"""YAML alias and merge-key expansion counted on libyaml's events, before any node is built
(issue 29 item 1)."""

from __future__ import annotations

import pytest

from workload_map.definitions.load import check_expansion, decode_definition
from workload_map.errors import InvalidRequest


def test_aliases_count_their_anchor_each_time() -> None:
    # a: [x, y] is 3 values (the list + 2 scalars); b aliases it twice: 1 + 3 + 3 = 7; the
    # root mapping 1 + keys a, b (2) + a's 3 + b's 7 = 13
    check_expansion("a: &l [x, y]\nb: [*l, *l]\n", limit=13)
    with pytest.raises(InvalidRequest, match="more than 12 values"):
        check_expansion("a: &l [x, y]\nb: [*l, *l]\n", limit=12)


def test_a_merge_key_counts_the_merged_mapping() -> None:
    # base {k: 1} is 3; m merges it: 1 + '<<' 1 + 3 + 'j' 1 + '2' 1 = 7; root 1 + 2 keys + 3 + 7 = 13
    check_expansion("base: &b {k: 1}\nm: {<<: *b, j: 2}\n", limit=13)
    with pytest.raises(InvalidRequest, match="merge keys"):
        check_expansion("base: &b {k: 1}\nm: {<<: *b, j: 2}\n", limit=12)


def test_a_chain_of_merges_is_refused_without_expanding_it() -> None:
    # each level holds the one before: sizes grow by 5 a level, totals quadratically;
    # 20,000 levels would be about 10^9 values
    lines = ["a0: &a0 {k0: 1}"] + [f"a{i}: &a{i} {{<<: *a{i - 1}, k{i}: 1}}" for i in range(1, 20_000)]
    with pytest.raises(InvalidRequest, match="more than 250000 values"):
        decode_definition("\n".join(lines))


def test_a_recursive_alias_is_refused() -> None:
    with pytest.raises(InvalidRequest, match="alias inside its own anchor"):
        decode_definition("a: &a [1, *a]\n")


def test_a_star_in_a_comment_costs_nothing_special() -> None:
    assert decode_definition("a: 1  # *not an alias*\nb: [2]\n") == {"a": 1, "b": [2]}


def test_the_size_cap_comes_before_parsing() -> None:
    text = "a: 1\n# *\nb: " + "x" * (2 * 1024 * 1024) + "\n"  # 12 + 2 MiB + 1 = 2,097,165 characters
    with pytest.raises(InvalidRequest, match=r"definition of 2097165 bytes exceeds the limit of 1048576"):
        decode_definition(text)
