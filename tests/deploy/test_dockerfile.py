"""Static checks of the Dockerfile and .dockerignore (no Docker engine runs in CI).

Checked: every stage's base is a slim Python 3.11 image pinned by digest; the runtime lock
and the built wheel are installed hash-checked without resolution; the SBOM is written and
shipped; the final stage runs as a non-root user; a HEALTHCHECK calls /livez with python (slim has no curl); no test extras or
test tools are installed; every COPY source exists in the repository and survives
.dockerignore; the catalog and sample paths are set; the entrypoint serves on 0.0.0.0.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO_ROOT / "Dockerfile"
DOCKERIGNORE = REPO_ROOT / ".dockerignore"
PINNED_BASE = re.compile(r"^python:3\.11\.\d+-slim-(bookworm|trixie)@sha256:[0-9a-f]{64}$")


@dataclass
class Stage:
    """One build stage: its base image, name and instructions (keyword, argument text)."""

    base: str
    name: str
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def args(self, keyword: str) -> list[str]:
        return [a for k, a in self.instructions if k == keyword]


def parse(text: str) -> tuple[dict[str, str], list[Stage]]:
    """Global ARG defaults and the stages of a Dockerfile (continuations joined)."""
    logical, buf = [], ""
    for line in text.splitlines():
        if not buf and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            buf += line.rstrip()[:-1] + " "
            continue
        logical.append(buf + line)
        buf = ""
    args: dict[str, str] = {}
    stages: list[Stage] = []
    for line in logical:
        keyword, _, rest = line.strip().partition(" ")
        keyword, rest = keyword.upper(), rest.strip()
        if keyword == "ARG" and not stages:
            name, _, default = rest.partition("=")
            args[name] = default
        elif keyword == "FROM":
            words = rest.split()
            base = re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args.get(m.group(1) or m.group(2), ""), words[0])
            name = words[2] if len(words) >= 3 and words[1].upper() == "AS" else str(len(stages))
            stages.append(Stage(base, name))
        elif stages:
            stages[-1].instructions.append((keyword, rest))
    return args, stages


def copy_sources(arg: str) -> tuple[list[str], bool]:
    """``(sources, from_other_stage)`` of a COPY argument (JSON or shell form)."""
    words = json.loads(arg) if arg.startswith("[") else shlex.split(arg)
    flags = [w for w in words if w.startswith("--")]
    paths = [w for w in words if not w.startswith("--")]
    return paths[:-1], any(f.startswith("--from=") for f in flags)


def ignored(path: str, patterns: list[str]) -> bool:
    """.dockerignore semantics: last matching pattern wins; a pattern also matches children."""
    parts = path.strip("/").split("/")
    result = False
    for raw in patterns:
        negate = raw.startswith("!")
        pattern = raw[1:] if negate else raw
        pattern = pattern.strip("/")
        for depth in range(1, len(parts) + 1):
            candidate = "/".join(parts[:depth])
            if fnmatch.fnmatchcase(candidate, pattern) or (
                    pattern.startswith("**/") and fnmatch.fnmatchcase(parts[depth - 1], pattern[3:])):
                result = not negate
                break
    return result


def dockerignore_patterns() -> list[str]:
    return [ln.strip() for ln in DOCKERIGNORE.read_text().splitlines() if ln.strip() and not ln.startswith("#")]


@pytest.fixture(scope="module")
def stages() -> list[Stage]:
    return parse(DOCKERFILE.read_text())[1]


def test_multi_stage_on_a_pinned_slim_base(stages: list[Stage]) -> None:
    assert len(stages) >= 2, "expected a build stage and a runtime stage"
    for stage in stages:
        assert PINNED_BASE.match(stage.base), f"stage {stage.name}: base {stage.base!r} is not a pinned slim 3.11"
        assert not stage.base.endswith(":latest")
    final = stages[-1]
    assert any(copy_sources(a)[1] for a in final.args("COPY")), "runtime stage copies nothing from the build stage"


def test_runs_as_non_root(stages: list[Stage]) -> None:
    final = stages[-1]
    users = final.args("USER")
    assert users, "the runtime stage sets no USER"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0"), f"USER {users[-1]}"
    # nothing after USER needs root: the last USER comes after every RUN and COPY
    keywords = [k for k, _ in final.instructions]
    last_user = len(keywords) - 1 - keywords[::-1].index("USER")
    assert not {"RUN", "COPY", "ADD"} & set(keywords[last_user:]), keywords[last_user:]
    if user.isdigit():
        assert int(user) >= 1000
        # the chart's securityContext runs as the same uid
        values = (REPO_ROOT / "deploy" / "helm" / "workload-map-server" / "values.yaml").read_text()
        assert f"runAsUser: {user}" in values


def test_healthcheck_probes_livez_with_python(stages: list[Stage]) -> None:
    checks = stages[-1].args("HEALTHCHECK")
    assert len(checks) == 1
    check = checks[0]
    assert "CMD" in check and "/livez" in check
    assert "python" in check and "curl" not in check and "wget" not in check
    assert re.search(r"--timeout=\d+s", check) and re.search(r"--interval=\d+s", check)


def test_no_test_extras_or_tools_installed(stages: list[Stage]) -> None:
    text = DOCKERFILE.read_text()
    runs = " ".join(a for s in stages for a in s.args("RUN"))
    for bad in ("[test]", ".[test", "pytest", "hypothesis", "pip install -e", "--editable", "requirements-dev"):
        assert bad not in runs, f"RUN installs {bad!r}"
    assert "optional-dependencies" not in text
    # the runtime requirements are exactly the runtime lock's, then the built wheel, both
    # hash-checked and unresolved (a package missing from the lock fails the build)
    assert "/opt/venv/bin/pip install --require-hashes --no-deps -r requirements/runtime.txt" in runs
    assert "/opt/venv/bin/pip install --require-hashes --no-deps -r /build/wheel.txt" in runs
    assert "requirements/dev.txt" not in runs and "--group" not in runs
    # the runtime stage installs nothing itself
    assert not any("pip install" in a for a in stages[-1].args("RUN"))


def test_every_copy_source_exists_and_is_in_the_build_context(stages: list[Stage]) -> None:
    patterns = dockerignore_patterns()
    seen = []
    for stage in stages:
        for arg in stage.args("COPY") + stage.args("ADD"):
            sources, from_stage = copy_sources(arg)
            if from_stage:
                continue
            for src in sources:
                assert not src.startswith(("/", "..")) and "://" not in src, src
                assert (REPO_ROOT / src).exists(), f"COPY {src}: not in the repository"
                assert not ignored(src, patterns), f"COPY {src}: excluded by .dockerignore"
                seen.append(src.rstrip("/"))
    for needed in ("pyproject.toml", "server", "catalog", "deploy/crds"):
        assert needed in seen, f"the image must contain {needed}"


def test_dockerignore_keeps_local_state_out() -> None:
    patterns = dockerignore_patterns()
    for path in (".venv/bin/python", ".git/config", "tests/conftest.py", ".wmap-state/x", "deploy/README.md",
                 "server/workload_map/__pycache__/app.cpython-311.pyc", "benchmarks/results/x.json", ".env"):
        assert ignored(path, patterns), f"{path} would be sent to the build context"
    for path in ("server/workload_map/app.py", "server/workload_map/sample/x.yaml", "catalog/x.yaml", "README.md"):
        assert not ignored(path, patterns), f"{path} is excluded"


def test_entrypoint_serves_on_all_interfaces_in_the_container(stages: list[Stage]) -> None:
    final = stages[-1]
    entry = json.loads(final.args("ENTRYPOINT")[-1])
    assert entry == ["wmap", "serve", "--host", "0.0.0.0"]
    env = " ".join(final.args("ENV"))
    # the wheel brings the catalog, the CRD and the sample: no source tree, no path overrides
    assert "PYTHONPATH" not in env and "WMAP_CATALOG_DIR" not in env and "WMAP_SAMPLE_DIR" not in env
    assert "-r /build/wheel.txt" in DOCKERFILE.read_text()
    expose = final.args("EXPOSE")
    assert expose == ["8080"]


def test_the_server_default_host_stays_loopback() -> None:
    from workload_map.config import HttpSettings

    assert HttpSettings().host == "127.0.0.1"


def test_the_base_digest_names_where_it_was_read() -> None:
    text = DOCKERFILE.read_text()
    digest = re.search(r"^ARG PYTHON_IMAGE=python:3\.11\.15-slim-bookworm@(sha256:[0-9a-f]{64})$", text, re.M)
    assert digest, "the base is pinned by the digest of python:3.11.15-slim-bookworm"
    # the comment above it says where the digest was published (never an invented one)
    assert "docker-library/repo-info" in text and "3.11.15-slim-bookworm.md" in text


def test_the_image_ships_an_sbom_of_its_environment(stages: list[Stage]) -> None:
    runs = " ".join(a for a in stages[0].args("RUN"))
    assert "cyclonedx-py environment" in runs and "/opt/venv/bin/python" in runs
    assert "/opt/tools/bin/pip install --require-hashes --no-deps -r requirements/build.txt" in runs
    copies = [copy_sources(a) for a in stages[-1].args("COPY")]
    assert (["/opt/sbom/"], True) in copies
