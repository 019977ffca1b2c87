"""GPUs, definitions and the studio pages in a real browser (a server of this module's own:
the studio test registers definitions).

Sample figures (server/workload_map/sample/jobset-x-k8s-io-jobset-v1alpha2.yaml): the four
JobSets of ml-training each ask 3 pods x 4 GPUs = 12 by spec, 48 in all; by pods
llm-pretrain 12 (3 pods) + llm-pretrain-starting 12 (3 pods) + crashed 0 + queued 0 = 24;
allocated 12 + 8 (two of the starting pods are bound) = 20.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.abuse.server import REPO, SAMPLE, Served
from tests.ui.conftest import shot
from tests.ui.test_pages import _expect

JOBSET_FILE = SAMPLE / "jobset-x-k8s-io-jobset-v1alpha2.yaml"
CATALOG_JOBSET = "jobset-x-k8s-io-jobset-v1alpha2"
CONDITIONS_PATH = "spec.structureDefinition.rootComponent.statusDefinition.conditionsDefinition.path"


def _fill(page: Any, selector: str, text: str) -> None:
    """Set a text area's value (Playwright's fill types long texts slowly: 70 KB took 24 s)."""
    page.locator(selector).evaluate("(el, text) => { el.value = text; }", text)


def test_gpu_totals_chart_and_click_through(server: Served, page: Any) -> None:
    expect = _expect()
    page.goto(server.base + "/ui/#/gpus")
    bar = page.locator("#by-namespace [data-key=ml-training]")
    expect(bar).to_have_attribute("aria-label", "ml-training: 48 requested by spec, 24 requested by pods, "
                                                "20 allocated (4 workloads)")
    everything = httpx.get(server.base + "/api/v1/workloads", params={"limit": 1}).json()["totalCount"]
    expect(page.locator("#gpu-workloads .tile-value")).to_have_text(str(everything))
    expect(page.locator("#by-node [data-key=gpu-node-03]")).to_be_visible()  # llm-pretrain's leader pod
    shot(page, "gpus")
    bar.focus()
    page.keyboard.press("Enter")  # a bar is a link, reachable by keyboard
    expect(page.locator("#count")).to_have_text("1–4 of 4")
    assert page.url.endswith("#/workloads?namespace=ml-training")


def test_a_node_bar_lists_the_workloads_with_a_pod_there(server: Served, page: Any) -> None:
    expect = _expect()
    page.goto(server.base + "/ui/#/gpus")
    page.locator("#by-node [data-key=gpu-node-03]").click()
    expect(page.locator("tr[data-name=llm-pretrain]")).to_have_count(1)  # its leader pod runs on gpu-node-03
    rows = httpx.get(server.base + "/api/v1/workloads", params={"node": "gpu-node-03"}).json()["items"]
    expect(page.locator("#count")).to_have_text(f"1–{len(rows)} of {len(rows)}")


def test_the_studio_flags_a_broken_path(server: Served, page: Any) -> None:
    expect = _expect()
    page.goto(server.base + f"/ui/#/studio?definition={CATALOG_JOBSET}")
    expect(page.locator("#studio-definition")).not_to_have_value("")
    broken = page.locator("#studio-definition").input_value().replace(
        '"path": ".status.conditions"', '"path": ".status.conditions[] |"')
    assert broken != page.locator("#studio-definition").input_value()
    _fill(page, "#studio-definition", broken)
    _fill(page, "#studio-objects", JOBSET_FILE.read_text(encoding="utf-8"))
    page.click("#studio-evaluate")
    expect(page.locator("#studio-findings .finding-path")).to_have_text([CONDITIONS_PATH])
    expect(page.locator("#studio-findings")).to_contain_text("failed to parse")
    shot(page, "studio-broken")


def test_the_studio_resolves_a_valid_definition_on_pasted_objects(server: Served, page: Any) -> None:
    expect = _expect()
    page.goto(server.base + "/ui/#/studio")
    page.select_option("#studio-catalog", CATALOG_JOBSET)
    expect(page.locator("#studio-definition")).not_to_have_value("")
    _fill(page, "#studio-objects", JOBSET_FILE.read_text(encoding="utf-8"))
    _fill(page, "#studio-root", "llm-pretrain")
    page.click("#studio-evaluate")
    expect(page.locator("#studio-valid")).to_contain_text("JobSet")
    expect(page.locator("#studio-phase .chip")).to_have_text("Running")
    expect(page.locator("#studio-tree .role-name")).to_have_text(["leader", "worker"])
    expect(page.locator("#studio-tree")).to_contain_text("GPUs 12 spec")  # (1 + 2) pods x 4
    # the root component's conditions path, evaluated on the JobSet: its status has no conditions
    row = page.locator("#studio-paths tr", has=page.locator(f"code:text-is('{CONDITIONS_PATH}')"))
    expect(row.locator("pre.output")).to_have_text("null")
    # a pod selector path runs on each pod: the replicatedjob-name label of the three pods
    key = "spec.structureDefinition.childComponents[0].podSelector.componentTypeSelector.keyPath"
    row = page.locator("#studio-paths tr", has=page.locator(f"code:text-is('{key}')"))
    expect(row.locator("pre.output")).to_contain_text('llm-pretrain-leader-0-0-wpjmg: "leader"')
    expect(row.locator("pre.output")).to_contain_text('llm-pretrain-worker-1-0-w5zlg: "worker"')
    expect(page.locator("#studio-paths tr.path-error")).to_have_count(0)  # every path of it reads fine
    shot(page, "studio-valid")


def test_the_studio_on_a_live_workload_then_register(server: Served, page: Any) -> None:
    expect = _expect()
    page.goto(server.base + "/ui/" + "#/workloads/snapshot/ml-training/jobset.x-k8s.io/JobSet/llm-pretrain")
    page.get_by_role("link", name="Open in the studio").click()
    expect(page.locator("#studio-workload")).to_have_value("snapshot/ml-training/jobset.x-k8s.io/JobSet/llm-pretrain")
    expect(page.locator("#studio-definition")).not_to_have_value("")  # the definition in force for JobSet
    page.click("#studio-evaluate")
    expect(page.locator("#studio-tree .role-name")).to_have_text(["leader", "worker"])
    manifest = json.loads(page.locator("#studio-definition").input_value())
    manifest["metadata"] = {"name": "team-jobset"}
    _fill(page, "#studio-definition", json.dumps(manifest, indent=2))
    page.click("#studio-register")
    expect(page.locator("#studio-registered")).to_contain_text("Registered team-jobset (new)")
    # a second registration for the same kind through the same endpoint is refused (409),
    # and the page says why
    manifest["metadata"] = {"name": "team-jobset-later"}
    _fill(page, "#studio-definition", json.dumps(manifest, indent=2))
    page.click("#studio-register")
    expect(page.locator(".error-box")).to_contain_text("definition 'team-jobset' is already registered")
    page.goto(server.base + "/ui/#/definitions?name=team-jobset")
    registered = page.locator("#definition-team-jobset")
    expect(registered).to_contain_text("In force")
    expect(registered.locator("td").nth(2)).to_have_text("state")  # stored by this server (snapshot mode)
    expect(page.locator("#definition-team-jobset-later")).to_have_count(0)
    shot(page, "definitions")


def test_bad_studio_input_is_a_clear_400(server: Served) -> None:
    url = server.base + "/api/v1/studio/evaluate"
    missing = httpx.post(url, json={"objects": []})
    assert missing.status_code == 400 and missing.json()["message"] == "definition must be a non-empty string"
    bad = httpx.post(url, json={"definition": "kind: Karta", "objects": [{"kind": "Pod"}]})
    assert bad.status_code == 400 and bad.json()["message"] == "objects[0] must be a Kubernetes object with apiVersion and kind"


def test_a_definition_that_never_ends_is_stopped_at_the_budget(server: Served) -> None:
    # `def f: f; f` passes the static checks (it cannot be proven not to end); the resolver
    # worker evaluating it (a studio job of the server's pool) is killed at the resolver
    # budget (2 s by default) and replaced.
    text = (REPO / "catalog" / "jobset-x-k8s-io-jobset-v1alpha2.yaml").read_text(encoding="utf-8")
    assert "path: .status.conditions\n" in text
    text = text.replace("path: .status.conditions\n", "path: 'def f: f; f'\n")
    answer = httpx.post(server.base + "/api/v1/studio/evaluate", timeout=60,
                        json={"definition": text, "objects": JOBSET_FILE.read_text(encoding="utf-8")})
    assert answer.status_code == 422, answer.text
    assert "did not finish within the resolver's budget of 2 s" in answer.json()["message"]
    assert httpx.get(server.base + "/livez").status_code == 200
