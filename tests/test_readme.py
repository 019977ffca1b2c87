"""The README and docs/ say what is true: their commands run, their links and paths exist.

Every `wmap` and `curl` command in the ```sh blocks of README.md and docs/*.md runs as
written against a `wmap serve` with no cluster configured (the bundled sample), started on a
free 127.0.0.1 port (the pages' 127.0.0.1:8080 is rewritten to that port); README commands
run first, in page order, then each page's. The README must keep its five-minute shape (the
two commands, a tour with one GraphQL query, one registration and one CLI call, about 250
lines at most) and link every docs/ page; every relative link and anchor of every page must
resolve, every repository path a page names in backticks must exist, and no page may
describe the symbolic links the layout no longer has. `make run` / `make test` themselves are
exercised by this serve (what `make run` starts) and by .ci/run (which is `make test`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import httpx
import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = sorted((REPO / "docs").glob("*.md"))
PAGES = [README, *DOCS]
README_MAX_LINES = 300
REPO_PREFIXES = ("server/", "schema/", "catalog/", "tests/", "deploy/", "benchmarks/", "docs/", "graphiql/", ".ci/")
"""Backticked text starting with one of these is a repository path that must exist."""
GENERATED = ("graphiql/assets", "benchmarks/results", "tests/artifacts")
"""Paths made by `make install`, the benchmarks or the browser tests, not committed."""


def commands(page: Path) -> list[str]:
    """The `wmap` / `curl` lines of the page's ```sh blocks, in order."""
    found = []
    for block in re.findall(r"```sh\n(.*?)```", page.read_text(), flags=re.S):
        found += [line.strip() for line in block.splitlines() if line.strip().startswith(("wmap ", "curl "))]
    return found


def all_commands() -> list[tuple[str, str]]:
    """(page name, command) over README then docs/."""
    return [(page.relative_to(REPO).as_posix(), c) for page in PAGES for c in commands(page)]


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Anchors of every heading of ``page``."""
    return {anchor(h) for h in re.findall(r"^#{1,6} (.+)$", page.read_text(), flags=re.M)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, dict[str, str]]]:
    home = tmp_path_factory.mktemp("home")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WMAP_", "KUBECONFIG"))}
    env.update(HOME=str(home), WMAP_STATE_DIR=str(home / "state"),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}")
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "workload_map", "serve", "--port", str(port)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        else:
            raise AssertionError("wmap serve did not become ready")
        yield port, env
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def test_readme_is_the_five_minute_door() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= README_MAX_LINES
    makefile = (REPO / "Makefile").read_text()
    for target in ("run", "test"):
        assert f"make {target}" in text and re.search(rf"^{target}:", makefile, flags=re.M), target
    tour = commands(README)
    assert any(c.startswith("curl ") and "/graphql" in c and '"query"' in c for c in tour), "one GraphQL query"
    assert any(c.startswith("curl ") and "-X POST" in c and ("/api/v1/definitions" in c or "/workload-types" in c)
               for c in tour), "one registration"
    assert any(c.startswith("wmap ") for c in tour), "one CLI call"
    linked = set(re.findall(r"\]\((docs/[\w.-]+\.md)", text))
    assert linked == {p.relative_to(REPO).as_posix() for p in DOCS}, "the README links every docs/ page"
    assert "## Features" in text  # where new features get their one-line summary and link


def test_pages_have_enough_commands_to_run() -> None:
    everything = [c for _, c in all_commands()]
    assert sum(c.startswith("curl ") for c in everything) >= 8
    assert sum(c.startswith("wmap ") for c in everything) >= 5


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_links_resolve(page: Path) -> None:
    text = page.read_text()
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue  # http(s), mailto
        path, _, fragment = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(target)
        elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
            broken.append(target)
    assert broken == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_named_paths_exist(page: Path) -> None:
    missing = []
    for quoted in re.findall(r"`([^`\s]+)`", page.read_text()):
        path = quoted.rstrip(".,:;)")
        if not path.startswith(REPO_PREFIXES) or re.search(r"[<>{}]|\.\.\.", path) or path.startswith(GENERATED):
            continue
        if not (REPO / path).exists() and not list(REPO.glob(path.rstrip("/"))):
            missing.append(path)
    assert missing == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_page_describes_the_old_links(page: Path) -> None:
    text = page.read_text()
    assert not re.search(r"workload_map -> server|workload_map\.graphql -> schema|workload_map/data/", text)


def test_the_repository_holds_no_symbolic_link() -> None:
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run(["git", "ls-files", "-s"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert [line for line in listed.splitlines() if line.startswith("120000")] == []


@pytest.mark.parametrize(("page", "command"), all_commands())
def test_page_command(page: str, command: str, server: tuple[int, dict[str, str]]) -> None:
    port, env = server
    assert shutil.which("wmap", path=env["PATH"]), "wmap must be installed in the venv"
    line = command.replace("127.0.0.1:8080", f"127.0.0.1:{port}")
    result = subprocess.run(line, shell=True, cwd=REPO, env=env, capture_output=True, text=True, timeout=60,
                            check=False)
    assert result.returncode == 0, f"{page}: {command}\n{result.stdout}\n{result.stderr}"
    assert result.stdout.strip(), command
    if command.startswith("curl ") and result.stdout.lstrip().startswith("{"):
        body = json.loads(result.stdout)
        assert "error" not in body and "errors" not in body, body
