"""The page under ``--auth kubernetes``: it asks for a bearer token once, keeps it in
sessionStorage only, sends it on every request and the websocket, and shows only what the
caller may see.

The server is the app with the auth suite's rule-table reviewer (tests/auth/support.py: no
cluster here), served by uvicorn on 127.0.0.1 in a thread of its own (Playwright's sync API
owns this thread). Its objects: JobSets train-a, train-b and train-c in namespaces a, b
and c; bob may list JobSets in a and b only, so bob's list holds train-a and train-b.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.api.live import serving
from tests.ui.conftest import shot
from tests.ui.test_pages import _expect

START_S = 30.0


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from workload_map.app import create_app
    from workload_map.auth.access import KubernetesAccess
    from workload_map.config import AuthSettings, Settings
    from tests.auth.support import RULES, USERS, FakeReviewer, PluralReader, objects

    state = tmp_path_factory.mktemp("ui-auth") / "state"
    started, stop, where = threading.Event(), threading.Event(), {}

    async def run() -> None:
        settings = Settings(state_dir=Path(state), auth=AuthSettings(mode="kubernetes"))
        app = create_app(settings, reader=PluralReader(objects()), access=KubernetesAccess(FakeReviewer(USERS, RULES)))
        async with serving(app) as address:
            where["base"] = f"http://{address}"
            started.set()
            while not stop.is_set():
                await asyncio.sleep(0.05)

    thread = threading.Thread(target=lambda: asyncio.run(run()), daemon=True)
    thread.start()
    assert started.wait(START_S), "the guarded server did not start"
    yield where["base"]
    stop.set()
    thread.join(START_S)


def test_the_page_asks_for_a_token_once_and_shows_what_the_caller_may_see(guarded: str, page: Any) -> None:
    expect = _expect()
    page.goto(guarded + "/ui/#/workloads")
    dialog = page.locator("#token-dialog")
    expect(dialog).to_be_visible()  # the first request answered 401
    page.fill("#token-input", "bob-token")
    page.keyboard.press("Enter")
    expect(page.locator("#count")).to_have_text("1–2 of 2")
    expect(page.locator("table.grid tbody tr td:first-child")).to_have_text(["train-a", "train-b"])
    expect(page.locator("#live")).to_have_text("live")  # the websocket authenticated with the token too
    stored = page.evaluate("() => [sessionStorage.getItem('wmap.token'), localStorage.length, document.cookie]")
    assert stored == ["bob-token", 0, ""]  # the tab only
    page.goto(guarded + "/ui/#/gpus")  # another view: no second prompt
    expect(page.locator("#gpu-workloads .tile-value")).to_have_text("2")
    expect(dialog).to_be_hidden()
    shot(page, "auth-gpus")


def test_a_rejected_token_asks_again(guarded: str, page: Any) -> None:
    expect = _expect()
    page.goto(guarded + "/ui/#/workloads")
    page.fill("#token-input", "forged")
    page.keyboard.press("Enter")
    expect(page.locator("#token-error")).to_have_text("The token was not accepted.")
    page.fill("#token-input", "alice-token")
    page.keyboard.press("Enter")
    expect(page.locator("table.grid tbody tr td:first-child")).to_have_text(["train-a"])  # alice lists a only
