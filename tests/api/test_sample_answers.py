"""Behaviour unchanged by the restructuring of issue 26: the same answers over the bundled sample.

``tests/fixtures/sample_answers.json`` holds the GraphQL and REST answers of the code before
the restructuring (commit 26af59e) to the questions of ``tests/api/sample_answers.py``: every
field of every workload page by page, filtered pages, ``workload(...)``, ``gpuSummary`` for
every ``groupBy``, ``definitions``/``definition``, ``podWorkload`` and the REST pod lookup for
a few pods, ``cluster``, and the REST workload lists (summary and ``view=full``), a workload by
name, its phase, the definitions and workload-types listings and four error answers. The
current code, over the same sample in process, must give the same answers after the same
normalization: only the server-clock times ``lastSuccess``, ``since`` and ``registeredAt``
are replaced by a marker (``sample_answers.VOLATILE``). Regenerate (from the old code, or
from the current code for a deliberate change) as ``sample_answers``' docstring says.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.api import sample_answers


def differences(old: Any, new: Any, path: str = "$") -> list[str]:
    """Paths where ``new`` differs from ``old`` (at most one line per differing leaf or shape)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = [f"{path}.{k}: missing" for k in old.keys() - new.keys()]
        out += [f"{path}.{k}: added" for k in new.keys() - old.keys()]
        for key in sorted(old.keys() & new.keys()):
            out += differences(old[key], new[key], f"{path}.{key}")
        return out
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            return [f"{path}: {len(old)} items, now {len(new)}"]
        return [d for i, (a, b) in enumerate(zip(old, new)) for d in differences(a, b, f"{path}[{i}]")]
    return [] if old == new and type(old) is type(new) else [f"{path}: {old!r} -> {new!r}"]


@pytest.fixture(scope="module")
def recorded() -> dict[str, Any]:
    """The committed answers of commit 26af59e."""
    answers: dict[str, Any] = json.loads(sample_answers.FIXTURE.read_text())
    return answers


@pytest.fixture(scope="module")
async def current() -> dict[str, Any]:
    """The current code's answers to the same questions (one app over the sample)."""
    return await sample_answers.record()


def test_the_fixture_holds_real_answers(recorded: dict[str, Any]) -> None:
    # The sample (server/workload_map/sample) holds 141 top-level workloads: 3 pages of 50.
    pages = recorded["workloads-all"]
    assert [len(p["data"]["workloads"]["nodes"]) for p in pages] == [50, 50, 41]
    assert {p["data"]["workloads"]["totalCount"] for p in pages} == {141}
    # llm-pretrain: a JobSet with a leader (1 pod) and a worker job of 2 pods, each pod
    # requesting 4 nvidia.com/gpu and bound: 3 x 4 = 12 GPUs by spec, by pods and allocated.
    llm = recorded["workload-llm"]["data"]["workload"]
    assert (llm["phase"], llm["gpu"]["requestedBySpec"], llm["gpu"]["allocated"]) == ("RUNNING", 12.0, 12.0)
    assert [(r["name"], r["replicas"]["ready"]) for r in llm["roles"]] == [("leader", 1), ("worker", 2)]
    assert recorded["rest-phase-llm"] == {"status": 200, "body": {"phase": "Running", "phases": ["Running"]}}
    # The error answers are errors, the others are not.
    assert recorded["rest-workload-missing"]["status"] == 404
    assert recorded["rest-bad-view"]["status"] == 400
    assert recorded["workload-missing"] == {"data": {"workload": None}}
    assert [name for name, answer in recorded.items() if isinstance(answer, dict) and "errors" in answer] == []
    assert len(sample_answers.FIXTURE.read_bytes()) < 2_000_000


def test_every_question_is_in_the_fixture(recorded: dict[str, Any], current: dict[str, Any]) -> None:
    assert sorted(current) == sorted(recorded)


def test_the_answers_are_those_of_26af59e(recorded: dict[str, Any], current: dict[str, Any]) -> None:
    changed = {name: differences(recorded[name], current.get(name))[:5] for name in recorded}
    assert {name: diff for name, diff in changed.items() if diff} == {}


def test_differences_name_the_path() -> None:
    old = {"a": [{"gpu": 4.0}, {"gpu": 8.0}], "b": 1}
    assert differences(old, {"a": [{"gpu": 4.0}, {"gpu": 8}], "c": 1}) == [
        "$.b: missing", "$.c: added", "$.a[1].gpu: 8.0 -> 8"]
    assert differences([1, 2], [1]) == ["$: 2 items, now 1"]


def test_normalize_marks_only_clock_values() -> None:
    value = {"cluster": {"lastSuccess": "2026-12-01T00:00:00Z", "since": None, "name": "local"},
             "definitions": [{"registeredAt": "", "resourceVersion": "17"}]}
    assert sample_answers.normalize(value) == {
        "cluster": {"lastSuccess": "<set>", "since": None, "name": "local"},
        "definitions": [{"registeredAt": "", "resourceVersion": "17"}]}
