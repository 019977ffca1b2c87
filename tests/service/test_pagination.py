"""Cursor pagination (``workload_map.service.pagination``): order, cursors, lists kept per object."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from workload_map.service.pagination import decode_cursor, encode_cursor, paginate


@dataclass(frozen=True)
class _View:
    """The fields ``sort_key`` reads of a ``WorkloadView``."""

    namespace: str | None
    kind: str
    group: str
    name: str
    cluster: str = ""


def _views(count: int) -> list[Any]:
    out = [_View(f"ns-{i % 7}", "JobSet" if i % 2 else "Job", "jobset.x-k8s.io" if i % 2 else "batch", f"w-{i:04d}")
           for i in range(count)]
    random.Random(5).shuffle(out)
    return out


def _walk(views: list[Any], size: int) -> list[list[Any]]:
    pages, after = [], None
    while True:
        page = paginate(views, first=size, after=after)
        pages.append(page.items)
        assert page.total == len(views) and page.has_previous is (after is not None)
        if not page.has_next:
            return pages
        after = page.end_cursor


def test_a_walk_visits_every_view_once_in_namespace_kind_group_name_order() -> None:
    views = _views(250)
    pages = _walk(views, 100)
    assert [len(p) for p in pages] == [100, 100, 50]
    walked = [v for p in pages for v in p]
    assert walked == sorted(views, key=lambda v: (v.namespace, v.kind, v.group, v.name))
    assert walked[0] == _View("ns-0", "Job", "batch", "w-0000")  # ns-0 holds w-0000, w-0014, ...; Job < JobSet


def test_a_cursor_whose_view_is_gone_resumes_at_the_next_key() -> None:
    views = _views(30)
    first = paginate(views, first=10, after=None)
    last = first.items[-1]
    later = [v for v in views if v is not last]  # a new list (a new generation) without the page's last view
    resumed = paginate(later, first=10, after=first.end_cursor)
    ordered = sorted(views, key=lambda v: (v.namespace, v.kind, v.group, v.name))
    assert resumed.items == ordered[10:20] and resumed.total == 29


def test_another_list_is_not_answered_with_the_kept_order_of_the_first() -> None:
    views = _views(40)
    assert paginate(views, first=500, after=None).total == 40
    grown = [*views, _View("aaa", "Job", "batch", "first")]
    page = paginate(grown, first=500, after=None)
    assert page.total == 41 and page.items[0].name == "first"


def test_a_cursor_round_trips_and_an_old_four_part_one_reads_as_the_first_cluster() -> None:
    key = ("ns", "JobSet", "jobset.x-k8s.io", "train", "east")
    assert decode_cursor(encode_cursor(key)) == key
    assert decode_cursor(encode_cursor(key[:4])) == (*key[:4], "")  # type: ignore[arg-type]
