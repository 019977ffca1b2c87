"""Argo Workflow (argoproj.io/v1alpha1): expected views of the fixture states, worked out by hand.

Rules used (Argo Workflows v3.7): one pod per Pod node, owned by the Workflow; a template's desired
pods = its Pod nodes that are Pending or Running now. Every fixture is the DAG preprocess (CPU) ->
train (4 GPUs) -> evaluate x 2 (1 GPU each). Finished steps' pods are kept (no podGC) but are
terminated, so they count in no figure.
"""

from __future__ import annotations

import pytest

from tests.catalog.support import Case, assert_case

SLUG = "argoproj-io-workflow-v1alpha1"
IDS = {"step": ["preprocess", "train", "evaluate"]}


def steps(pre: tuple[int, int, int] = (0, 0, 0), train: tuple[int, int, int] = (0, 0, 0),
          evaluate: tuple[int, int, int] = (0, 0, 0)) -> dict[str, tuple[int, int, int]]:
    return {"preprocess": pre, "train": train, "evaluate": evaluate}


CASES = [
    # train runs (4 GPUs); preprocess Succeeded (its kept pod is terminated).
    Case("running", "Running", ("Running",), steps(train=(1, 1, 1)), IDS, (1, 1, 1), (4, 4, 4)),
    # evaluate x 2 (Running + Pending nodes) x 1 GPU = 2; the pending pod has no node -> 1 allocated.
    Case("running-fanout", "Running", ("Running",), steps(evaluate=(2, 2, 1)), IDS, (2, 2, 1), (2, 2, 1)),
    Case("succeeded", "Completed", ("Completed",), steps(), IDS, (0, 0, 0), (0, 0, 0)),
    Case("failed", "Failed", ("Failed",), steps(), IDS, (0, 0, 0), (0, 0, 0)),
    # held after preprocess: no step runs, nothing asked for until it is resumed.
    Case("suspended", "Suspended", ("Suspended",), steps(), IDS, (0, 0, 0), (0, 0, 0)),
    Case("submitted", "Initializing", ("Initializing",), steps(), IDS, (0, 0, 0), (0, 0, 0)),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.state)
def test_view(case: Case) -> None:
    assert_case(SLUG, case)
