"""Fixtures of the browser tests: a real ``wmap serve`` over the bundled sample on
127.0.0.1 and Debian's chromium driven by Playwright (its executable path: Playwright's own
browser builds are never downloaded). Without chromium or Playwright the tests skip with
the reason; ``make test`` installs chromium first (Makefile target ``browser``)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.abuse.server import REPO, Served, serve

ARTIFACTS = REPO / "tests" / "artifacts" / "ui"
"""Screenshots of the runs (git-ignored)."""


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = shutil.which("chromium")
    if path is None:
        pytest.skip("Debian's chromium is not installed (make browser, or apt-get install chromium)")
    pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed (pip install -e '.[test]')")
    return path


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with serve(tmp_path_factory.mktemp("ui")) as served:
        yield served


@pytest.fixture(scope="module")
def browser(chromium_path: str) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=chromium_path, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    yield opened
    context.close()
    assert errors == []  # no script error on the page


def shot(page: Any, name: str) -> Path:
    """Save a full-page screenshot as a test artifact; returns its path."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
