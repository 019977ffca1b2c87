"""GraphiQL offline (issue 16 item 3): local assets when fetched, the CDN otherwise, --no-graphiql.

The "present" cases use a small page of our own whose two CDN references carry the
integrity of files written here (the real packages come from the npm registry through
``graphiql/fetch.py``; when that folder exists, the real page is checked too).
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from workload_map.api import graphiql as graphiql_module
from workload_map.api.graphiql import GraphiQLPage, graphql_ide_page, page_assets
from workload_map.app import create_app
from workload_map.cli.main import parser
from workload_map.config import Settings
from workload_map.paths import REPO_ROOT
from workload_map.kube.snapshot import SnapshotReader

HTML = {"accept": "text/html"}
LOCK = REPO_ROOT / "graphiql" / "assets.lock.json"
FETCHED = REPO_ROOT / "graphiql" / "assets"
JS, CSS = b"window.fake = 1;\n", b"body { color: red }\n"


def sri(data: bytes) -> str:
    return "sha384-" + base64.b64encode(hashlib.sha384(data).digest()).decode()


def fake_page() -> str:
    return (f'<html><head><link rel="stylesheet" href="https://cdn.example.com/graphiql@3.8.3/graphiql.min.css"\n'
            f'  integrity="{sri(CSS)}" crossorigin="anonymous" /></head><body>\n'
            f'<script src="https://cdn.example.com/@graphiql/plugin-explorer@1.0.2/dist/index.umd.js"\n'
            f'  integrity="{sri(JS)}" crossorigin="anonymous"></script></body></html>')


def fake_assets(root: Path) -> Path:
    (root / "graphiql@3.8.3").mkdir(parents=True)
    (root / "graphiql@3.8.3" / "graphiql.min.css").write_bytes(CSS)
    (root / "@graphiql" / "plugin-explorer@1.0.2" / "dist").mkdir(parents=True)
    (root / "@graphiql" / "plugin-explorer@1.0.2" / "dist" / "index.umd.js").write_bytes(JS)
    return root


async def _client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(settings, reader=SnapshotReader([]))
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
            yield client


def _urls(page: str) -> list[str]:
    return re.findall(r'(?:src|href)="([^"]+)"', page)


def test_the_lock_pins_exactly_the_packages_strawberrys_page_loads() -> None:
    assets = page_assets(graphql_ide_page())
    # react, react-dom, js-cookie, graphiql js + css, plugin-explorer js + css
    assert len(assets) == 7
    pinned = json.loads(LOCK.read_text())["packages"]
    assert {a.spec for a in assets} == set(pinned)
    assert all(v.startswith("sha512-") and len(base64.b64decode(v[7:])) == 64 for v in pinned.values())


async def test_with_assets_present_the_page_references_only_local_urls(tmp_path: Path, monkeypatch:
                                                                      pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("workload_map.app.graphql_ide_page", fake_page)
    settings = Settings(state_dir=tmp_path / "state", graphiql_assets_dir=fake_assets(tmp_path / "assets"))
    async for client in _client(settings):
        page = await client.get("/graphql", headers=HTML)
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert _urls(page.text) == ["/graphiql/assets/graphiql@3.8.3/graphiql.min.css",
                                    "/graphiql/assets/@graphiql/plugin-explorer@1.0.2/dist/index.umd.js"]
        assert "https://" not in page.text and f'integrity="{sri(JS)}"' in page.text  # the browser checks too
        css = await client.get("/graphiql/assets/graphiql@3.8.3/graphiql.min.css")
        assert (css.status_code, css.headers["content-type"], css.content) == (200, "text/css; charset=utf-8", CSS)
        js = await client.get("/graphiql/assets/@graphiql/plugin-explorer@1.0.2/dist/index.umd.js")
        assert (js.status_code, js.headers["content-type"], js.content) == (
            200, "text/javascript; charset=utf-8", JS)
        for other in ("/graphiql/assets/graphiql@3.8.3/package.json", "/graphiql/assets/../../etc/passwd",
                      "/graphiql/assets/graphiql@3.8.3/%2e%2e/%2e%2e/state"):
            missing = await client.get(other)
            assert missing.status_code == 404  # only the files the page names
            assert missing.json()["error"] == "not_found"  # the server's one error shape
        root = await client.get("/", follow_redirects=False)
        assert (root.status_code, root.headers["location"]) == (307, "/ui/")  # the web page; GraphiQL on /graphql


async def test_with_assets_absent_the_page_keeps_the_cdn_and_says_so(tmp_path: Path,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    settings = Settings(state_dir=tmp_path / "state", graphiql_assets_dir=tmp_path / "none")
    with caplog.at_level(logging.WARNING, logger=graphiql_module.__name__):
        async for client in _client(settings):
            page = await client.get("/graphql", headers=HTML)
            assert page.status_code == 200
            urls = [u for u in _urls(page.text) if not u.startswith("data:")]
            cdn = page_assets(graphql_ide_page())[0].cdn
            assert len(urls) == 7 and all(u.startswith(cdn) and cdn.startswith("https://") for u in urls)
            assert (await client.get("/graphiql/assets/graphiql@3.8.3/graphiql.min.js")).status_code == 404
    assert f"loads its assets from the CDN {cdn} (blank page without internet access): no GraphiQL " \
           f"assets folder {tmp_path / 'none'}" in caplog.text


def test_a_file_that_does_not_match_its_integrity_means_the_cdn(tmp_path: Path) -> None:
    assets = fake_assets(tmp_path / "assets")
    (assets / "graphiql@3.8.3" / "graphiql.min.css").write_bytes(b"tampered")
    page = GraphiQLPage(fake_page(), assets)
    assert not page.local and "graphiql.min.css does not match the page's integrity" in page.reason
    assert page.html == fake_page()


async def test_no_graphiql_answers_a_browser_with_a_json_404(tmp_path: Path) -> None:
    args = parser().parse_args(["serve", "--no-graphiql"])
    from workload_map.cli.live import serve_settings

    settings = serve_settings(args, environ={})
    assert settings.graphiql is False
    settings.state_dir = tmp_path / "state"
    async for client in _client(settings):
        page = await client.get("/graphql", headers=HTML)
        assert page.status_code == 404 and page.headers["content-type"] == "application/json"
        assert "graphiql" not in page.text.lower()
        query = await client.post("/graphql", json={"query": "{ __typename }"})
        assert query.json() == {"data": {"__typename": "Query"}}  # the API itself is unchanged
        root = await client.get("/", follow_redirects=False)
        assert (root.status_code, root.headers["location"]) == (307, "/ui/")  # the web page stays


@pytest.mark.skipif(not FETCHED.is_dir(), reason="graphiql/fetch.py has not fetched the assets here")
def test_the_fetched_packages_match_strawberrys_page() -> None:
    page = GraphiQLPage(graphql_ide_page(), FETCHED)
    assert page.local, page.reason
    assert [u for u in _urls(page.html) if not u.startswith("data:")] == [a.url for a in page.assets]
