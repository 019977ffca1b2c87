"""A workload whose definition fails on it is shown plainly: the problem in a red box, the
rest of the view still there (a server of this module's own: it registers a definition).

The registered JobSet definition is the catalog one with the replicatedjob component's
replicasPath replaced by ``.spec.replicatedJobs[] | .name | tonumber``: on llm-pretrain the
first replicated job's name is "leader", which jq cannot parse as a number.
"""

from __future__ import annotations

import re
from typing import Any

import httpx

from tests.abuse.server import REPO, Served
from tests.ui.conftest import shot
from tests.ui.test_pages import JOBSET, _expect

BROKEN_REPLICAS = ".spec.replicatedJobs[] | .name | tonumber"


def broken_jobset() -> str:
    text = (REPO / "catalog" / "jobset-x-k8s-io-jobset-v1alpha2.yaml").read_text(encoding="utf-8")
    text = re.sub(r"name: jobset-x-k8s-io-jobset-v1alpha2", "name: jobset-broken-scale", text, count=1)
    changed, count = re.subn(r"replicasPath: >-\n(?:\s+.*\n)+?(?=\s+\w+:)", f"replicasPath: '{BROKEN_REPLICAS}'\n",
                             text, count=1)
    assert count == 1
    return changed


def test_a_resolution_problem_is_shown_with_the_rest_of_the_view(server: Served, page: Any) -> None:
    expect = _expect()
    done = httpx.post(server.base + "/api/v1/definitions", content=broken_jobset(),
                      headers={"content-type": "application/yaml"}, timeout=60)
    assert done.status_code == 201, done.text
    page.goto(server.base + JOBSET)
    box = page.locator("#resolution-errors")
    expect(box).to_contain_text('string ("leader") cannot be parsed as a number')
    expect(box).to_contain_text(BROKEN_REPLICAS)
    expect(page.locator("#definition-link")).to_have_text("jobset-broken-scale")
    expect(page.locator("h1")).to_have_text("llm-pretrain")  # the rest of the view is still shown
    expect(page.locator("#tile-gpus-pods .tile-value")).to_have_text("12")  # 3 pods x 4 GPUs, read from the pods
    shot(page, "workload-error")
