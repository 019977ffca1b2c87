"""The lock files agree with pyproject.toml (issue 27 items 1 and 3); offline, no resolver runs.

``make lock`` (uv) writes requirements/runtime.txt, build.txt and dev.txt; this checks what a
stale or hand-edited lock would get wrong: every declared dependency pinned to a version
its range admits, every pin carrying hashes, the same version wherever a package is pinned
twice, the dependency groups covered, and no development tool in the runtime lock or in the
published metadata (no extras).
"""

from __future__ import annotations

import re
import tomllib

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from workload_map.paths import REPO_ROOT

LOCKS = REPO_ROOT / "requirements"
PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())


def pins(name: str) -> dict[str, tuple[str, int]]:
    """``{canonical name: (version, number of hashes)}`` of one lock file."""
    out: dict[str, tuple[str, int]] = {}
    current = None
    for line in (LOCKS / name).read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^ ;\\]+)", line)
        if match:
            current = canonicalize_name(match.group(1))
            out[current] = (match.group(2), 0)
        elif current and line.strip().startswith("--hash=sha256:"):
            version, hashes = out[current]
            out[current] = (version, hashes + 1)
    return out


def group(name: str) -> list[Requirement]:
    """The requirements of a dependency group, included groups expanded."""
    reqs: list[Requirement] = []
    for item in PYPROJECT["dependency-groups"][name]:
        reqs += group(item["include-group"]) if isinstance(item, dict) else [Requirement(item)]
    return reqs


def assert_pinned(requirements: list[Requirement], lock: dict[str, tuple[str, int]], where: str) -> None:
    for req in requirements:
        name = canonicalize_name(req.name)
        assert name in lock, f"{req} is not in {where}: run `make lock`"
        assert req.specifier.contains(lock[name][0], prereleases=True), \
            f"{where} pins {name}=={lock[name][0]}, outside {req}: run `make lock`"


@pytest.mark.parametrize("name", ["runtime.txt", "build.txt", "dev.txt"])
def test_every_pin_has_hashes_and_says_how_it_was_made(name: str) -> None:
    lock = pins(name)
    assert lock, name
    assert {n: h for n, (_, h) in lock.items() if h == 0} == {}, f"pins without --hash in {name}"
    assert "#    make lock" in (LOCKS / name).read_text().splitlines()[1]


def test_the_runtime_lock_pins_every_dependency_and_nothing_else_declared() -> None:
    runtime = pins("runtime.txt")
    assert_pinned([Requirement(d) for d in PYPROJECT["project"]["dependencies"]], runtime, "runtime.txt")
    tools = {canonicalize_name(r.name) for g in ("test", "lint", "release") for r in group(g)}
    assert tools & set(runtime) == set(), "a development tool is in the runtime lock"


def test_the_dev_lock_holds_the_runtime_pins_and_every_group() -> None:
    runtime, dev = pins("runtime.txt"), pins("dev.txt")
    assert {n: v for n, (v, _) in runtime.items()} == {n: dev[n][0] for n in runtime}  # same versions
    assert_pinned(group("dev"), dev, "dev.txt")


def test_the_build_lock_repeats_the_build_system_and_agrees_with_the_others() -> None:
    build, dev, runtime = pins("build.txt"), pins("dev.txt"), pins("runtime.txt")
    declared = {canonicalize_name(Requirement(r).name): str(Requirement(r).specifier)
                for r in PYPROJECT["build-system"]["requires"]}
    in_group = {canonicalize_name(r.name): str(r.specifier) for r in group("build")}
    assert {n: in_group.get(n) for n in declared} == declared, "dependency group build must repeat [build-system]"
    assert_pinned(group("build"), build, "build.txt")
    for name, (version, _) in build.items():  # make install puts build.txt and dev.txt in one venv
        for other in (dev, runtime):
            assert name not in other or other[name][0] == version, f"{name} pinned differently"


def test_no_extras_and_tools_only_in_groups() -> None:
    assert "optional-dependencies" not in PYPROJECT["project"]
    assert set(PYPROJECT["dependency-groups"]) == {"test", "lint", "release", "dev", "build"}
    makefile = (REPO_ROOT / "Makefile").read_text()
    assert "[test]" not in makefile and "--require-hashes" in makefile


def test_pins_are_unique_per_file() -> None:
    for name in ("runtime.txt", "build.txt", "dev.txt"):
        names = [canonicalize_name(m.group(1)) for m in
                 re.finditer(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==", (LOCKS / name).read_text(), re.M)]
        assert len(names) == len(set(names)), name
