"""The web page on /ui in a real browser over a real ``wmap serve`` of the bundled sample.

Sample figures used below (server/workload_map/sample/jobset-x-k8s-io-jobset-v1alpha2.yaml):
JobSet ml-training/llm-pretrain has replicatedJobs leader (replicas 1) and worker (replicas
2), each Job parallelism 1 with one pod asking 4 nvidia.com/gpu: 3 pods, 1 + 2 = 3 ready,
(1 + 2) x 4 = 12 GPUs by spec, by pods and allocated (all three pods Running on a node).
Namespace ml-training holds exactly four JobSets and nothing else a definition covers:
llm-pretrain, llm-pretrain-starting, llm-pretrain-crashed and llm-pretrain-queued.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.abuse.server import Served
from tests.ui.conftest import shot

JOBSET = "/ui/#/workloads/snapshot/ml-training/jobset.x-k8s.io/JobSet/llm-pretrain"
WAIT_MS = 15_000
"""Bound of every wait for the page (a poll by Playwright, not a sleep)."""


def _expect() -> Any:
    from playwright.sync_api import expect

    expect.set_options(timeout=WAIT_MS)
    return expect


def test_root_redirects_to_the_page_and_graphiql_stays(server: Served) -> None:
    root = httpx.get(server.base + "/", follow_redirects=False)
    assert (root.status_code, root.headers["location"]) == (307, "/ui/")
    page = httpx.get(server.base + "/ui/")
    assert page.status_code == 200 and '<script type="module" src="js/app.js">' in page.text
    assert "https://" not in page.text  # nothing from a CDN
    assert "default-src 'self'" in page.headers["content-security-policy"]
    ide = httpx.get(server.base + "/graphql", headers={"accept": "text/html"})
    assert ide.status_code == 200 and "graphiql" in ide.text.lower()


def test_the_seed_jobset_page_shows_its_roles_pods_and_gpus(server: Served, page: Any) -> None:
    expect = _expect()
    page.goto(server.base + JOBSET)
    expect(page.locator("h1")).to_have_text("llm-pretrain")
    expect(page.locator("#tile-workloads .tile-value")).to_have_text("1")
    expect(page.locator("#tile-gpus .tile-value")).to_have_text("12")  # (1 + 2) pods x 4 GPUs
    expect(page.locator("#tile-gpus-allocated .tile-value")).to_have_text("12")
    expect(page.locator("#tile-pods .tile-value")).to_have_text("3/3")
    expect(page.locator(".role-name")).to_have_text(["leader", "worker"])
    expect(page.locator("[data-role=leader] li.pod")).to_have_count(1)
    expect(page.locator("[data-role=worker] li.pod")).to_have_count(2)
    expect(page.locator("[data-role=worker]")).to_contain_text("GPUs 8 spec")  # 2 pods x 4
    expect(page.locator("#definition-link")).to_have_text("jobset-x-k8s-io-jobset-v1alpha2")
    shot(page, "workload-jobset")


def test_a_filter_narrows_the_list_and_a_row_links_to_its_page(server: Served, page: Any) -> None:
    expect = _expect()
    everything = httpx.get(server.base + "/api/v1/workloads", params={"limit": 1}).json()["totalCount"]
    page.goto(server.base + "/ui/#/workloads")
    expect(page.locator("#count")).to_have_text(f"1–100 of {everything}")  # the first page of 100
    page.get_by_role("button", name="Next").click()  # paged on the server: the rest of the sample
    expect(page.locator("#count")).to_have_text(f"101–{everything} of {everything}")
    expect(page.locator("table.grid tbody tr")).to_have_count(everything - 100)
    page.get_by_role("button", name="Previous").click()
    expect(page.locator("#count")).to_have_text(f"1–100 of {everything}")
    # Kind keys carry the group: batch Jobs (apps: data-prep, data-prep-new, eval-sweep,
    # train-smoke) are apart from the six Volcano Jobs (Job.batch.volcano.sh) in hpc.
    page.select_option("#filter-kind", "Job.batch")
    expect(page.locator("table.grid tbody tr")).to_have_count(4)
    expect(page.locator("table.grid tbody tr td:first-child")).to_have_text(
        ["data-prep", "data-prep-new", "eval-sweep", "train-smoke"])
    page.select_option("#filter-kind", "")
    page.select_option("#filter-namespace", "ml-training")
    expect(page.locator("#count")).to_have_text("1–4 of 4")  # the four JobSets of ml-training
    page.fill("#filter-contains", "CRASH")
    page.keyboard.press("Enter")  # keyboard only: the text filter submits on Enter
    expect(page.locator("#count")).to_have_text("1–1 of 1")
    expect(page.locator("table.grid tbody tr")).to_have_count(1)
    expect(page.locator("table.grid tbody tr td").nth(4)).to_have_text("Failed")
    shot(page, "workloads-filtered")
    page.get_by_role("link", name="llm-pretrain-crashed").click()
    expect(page.locator("h1")).to_have_text("llm-pretrain-crashed")
    assert "ml-training/jobset.x-k8s.io/JobSet/llm-pretrain-crashed" in page.url  # a URL of its own


def test_a_change_in_the_cache_appears_without_reload(server: Served, page: Any) -> None:
    # Suspending through the REST action changes the in-memory snapshot objects
    # (spec.suspend: true): the JobSet definition's phase becomes Suspending; the page hears
    # it on the workloadPhaseChanged subscription and reloads its rows by itself.
    expect = _expect()
    page.goto(server.base + "/ui/#/workloads?namespace=ml-training&contains=starting")
    row = page.locator("tr[data-name=llm-pretrain-starting]")
    expect(row.locator(".chip")).to_have_text("Initializing")
    expect(page.locator("#live")).to_have_text("live")
    marker = page.evaluate("() => { window.__notReloaded = true; return location.href; }")
    path = "/api/v1/namespaces/ml-training/workloads/jobset.x-k8s.io/JobSet/llm-pretrain-starting/suspend"
    done = httpx.post(server.base + path, json={})
    assert done.status_code == 200 and done.json()["changed"] is True
    expect(row.locator(".chip")).to_have_text("Suspending")
    assert page.evaluate("() => window.__notReloaded === true") and page.url == marker
    shot(page, "workloads-live")


def test_keyboard_reaches_the_sections(server: Served, page: Any) -> None:
    expect = _expect()
    page.goto(server.base + "/ui/#/workloads")
    expect(page.locator("#count")).to_be_visible()
    page.keyboard.press("Tab")  # the skip link first
    assert page.evaluate("() => document.activeElement.className") == "skip"
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.textContent") == "GPUs"
    page.keyboard.press("Enter")
    expect(page.locator("nav a[aria-current=page]")).to_have_text("GPUs")


@pytest.mark.parametrize("path", ["/ui/js/app.js", "/ui/app.css"])
def test_static_files_are_open_paths_under_kubernetes_auth_too(server: Served, path: str) -> None:
    served = httpx.get(server.base + path)
    assert served.status_code == 200 and served.headers["x-content-type-options"] == "nosniff"


def test_every_page_file_is_package_data() -> None:
    # the wheel carries the page: every file of the static folder matches a package-data glob
    import fnmatch
    import tomllib

    from tests.abuse.server import REPO

    data = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-data"]
    static = REPO / "server" / "workload_map" / "api" / "static"
    files = [p for p in static.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert len(files) == 10  # index.html, app.css and the eight modules
    for path in files:
        package = ".".join(("workload_map", "api", "static", *path.parent.relative_to(static).parts))
        assert any(fnmatch.fnmatch(path.name, glob) for glob in data.get(package, [])), path
