"""``make release-check``: build the wheel, the image and the chart of one version from this tree and verify them.

Run from the repository root by ``make release-check`` (docs/release.md). Every step prints
what it checked; the first failure stops the run with a message naming it (exit 1); an
artifact that cannot be built on this machine (no image builder, no helm) is a failure too,
unless ``--allow-missing`` says to report it and go on.

1. Versions: ``pyproject.toml`` ``version`` equals the chart's ``appVersion``; docs/changelog.md
   has a ``## <version>`` section; ``--tag vX.Y.Z`` (the release tag) must name that version.
2. Wheel: built with the locked build backend (no isolated build env), installed into a fresh
   virtualenv from ``requirements/runtime.txt`` (``--require-hashes --no-deps``) and then the
   wheel (``--no-deps``); ``pip check``; ``wmap --version`` and ``wmap catalog`` run from it;
   the wheel holds ``py.typed``, the catalog, the Karta CRD and the sample.
3. Image: the Dockerfile built by podman, buildah or docker (the first installed); on a
   machine without a registry ``--standin`` builds it on the local stand-in base
   (``deploy/release/standin-base.sh``). Verified: the user is 10001, the entrypoint serves
   on 0.0.0.0, ``wmap --version`` runs inside as that user, the SBOM lists exactly the
   runtime lock and the server at this version. Saved as an OCI archive.
4. Chart: ``helm lint --strict`` with the defaults and every ``ci/*-values.yaml`` (no notes),
   ``helm package``; the packaged chart's appVersion is the version and its default image tag too.

Everything lands in ``dist/release/`` with a ``SHA256SUMS`` file.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import venv
import zipfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART_DIR = ROOT / "deploy" / "helm" / "workload-map-server"
RUNTIME_LOCK = ROOT / "requirements" / "runtime.txt"
HELM_VERSION = "v3.22.0"
IMAGE = "localhost/workload-map-server"


class ReleaseCheckError(RuntimeError):
    """A check failed: the message names it."""


def run(argv: list[str], *, cwd: Path = ROOT, env: dict[str, str] | None = None, timeout: float = 1800) -> str:
    """Run ``argv``; its stdout. Raises ReleaseCheckError with the tail of stderr on a non-zero exit."""
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise ReleaseCheckError(f"{' '.join(argv[:6])} ... exited {done.returncode}: "
                                f"{(done.stderr or done.stdout)[-3000:]}")
    return done.stdout


def version() -> str:
    """``[project] version`` of pyproject.toml."""
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"])


def locked_runtime() -> dict[str, str]:
    """``{normalized name: version}`` pinned in requirements/runtime.txt."""
    pins = {}
    for line in RUNTIME_LOCK.read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^ ;\\]+)", line)
        if match:
            pins[re.sub(r"[-_.]+", "-", match.group(1)).lower()] = match.group(2)
    return pins


def check_versions(tag: str | None) -> str:
    """The one version the wheel, the image and the chart carry; raises ReleaseCheckError when they disagree."""
    v = version()
    chart = yaml.safe_load((CHART_DIR / "Chart.yaml").read_text())
    if str(chart["appVersion"]) != v:
        raise ReleaseCheckError(f"Chart.yaml appVersion {chart['appVersion']} is not pyproject's version {v}")
    changelog = (ROOT / "docs" / "changelog.md").read_text()
    if not re.search(rf"^## {re.escape(v)}\b", changelog, re.M):
        raise ReleaseCheckError(f"docs/changelog.md has no '## {v}' section")
    if tag is not None and tag != f"v{v}":
        raise ReleaseCheckError(f"the tag {tag} does not name version {v} (expected v{v})")
    print(f"versions: {v} (pyproject, chart appVersion {chart['appVersion']}, chart {chart['version']}, changelog)")
    return v


def build_wheel(out: Path, v: str) -> Path:
    """Build and verify the wheel; its path."""
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out), "."])
    wheel = out / f"workload_map_server-{v}-py3-none-any.whl"
    if not wheel.is_file():
        raise ReleaseCheckError(f"no {wheel.name} in {out}")
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("workload_map/py.typed", "workload_map/catalog/core-pod-v1.yaml", "workload_map/crds/kartas.run.ai.yaml"):
        if needed not in names:
            raise ReleaseCheckError(f"{wheel.name} lacks {needed}")
    target = out / "venv"
    shutil.rmtree(target, ignore_errors=True)
    venv.create(target, with_pip=True)
    py, env = str(target / "bin" / "python"), {k: v for k, v in os.environ.items() if not k.startswith("WMAP_")}
    pip = [py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps"]
    run([*pip, "--require-hashes", "-r", str(RUNTIME_LOCK)], env=env)
    run([*pip, str(wheel)], env=env)
    run([py, "-m", "pip", "check"], env=env)
    said = run([str(target / "bin" / "wmap"), "--version"], cwd=out, env=env)
    if v not in said:
        raise ReleaseCheckError(f"wmap --version from the wheel says {said.strip()!r}, not {v}")
    count = json.loads(run([str(target / "bin" / "wmap"), "catalog", "-o", "json"], cwd=out, env=env))["count"]
    print(f"wheel: {wheel.name}: installed from the runtime lock into a fresh venv, pip check clean, "
          f"{said.strip()}, {count} built-in definitions")
    return wheel


def builder() -> str | None:
    """The first of podman, buildah, docker on PATH."""
    return next((tool for tool in ("podman", "buildah", "docker") if shutil.which(tool)), None)


def standin_base() -> str:
    """Make (or reuse) the local stand-in base; its image name."""
    return run(["bash", str(ROOT / "deploy" / "release" / "standin-base.sh")], timeout=1800).strip().splitlines()[-1]


def build_image(tool: str, tag: str, *, base: str | None, graphiql: bool = True) -> None:
    """Build the Dockerfile into ``tag`` with ``tool`` (``base``: the PYTHON_IMAGE build argument)."""
    argv = [tool, "build" if tool != "buildah" else "bud", "--network", "host", "-t", tag, "-f", "Dockerfile"]
    if tool == "buildah":  # layer cache; docker format keeps the HEALTHCHECK (OCI has none)
        argv[2:2] = ["--layers", "--format", "docker"]
    if base:
        argv += ["--build-arg", f"PYTHON_IMAGE={base}"]
    if not graphiql:
        argv += ["--build-arg", "GRAPHIQL_ASSETS=0"]
    run([*argv, "."], timeout=3600)


def image_config(tool: str, tag: str) -> dict[str, object]:
    """``{"user", "entrypoint"}`` of the built image."""
    if tool == "buildah":
        config = json.loads(run(["buildah", "inspect", "--type", "image", tag]))["OCIv1"]["config"]
        return {"user": config.get("User"), "entrypoint": config.get("Entrypoint")}
    config = json.loads(run([tool, "image", "inspect", tag]))[0]["Config"]
    return {"user": config.get("User"), "entrypoint": config.get("Entrypoint")}


def run_in_image(tool: str, tag: str, argv: list[str]) -> str:
    """Run ``argv`` in a container of ``tag`` as its configured user; stdout."""
    if tool == "buildah":
        ctr = run(["buildah", "from", "--quiet", tag]).strip()
        try:
            return run(["buildah", "run", "--network", "host", ctr, "--", *argv])
        finally:
            subprocess.run(["buildah", "rm", ctr], capture_output=True)
    return run([tool, "run", "--rm", "--read-only", "--network", "none", "--entrypoint", argv[0], tag, *argv[1:]])


def verify_image(tool: str, tag: str, v: str) -> dict[str, object]:
    """Check the built image; raises ReleaseCheckError. Returns what was found (user, version, SBOM components)."""
    config = image_config(tool, tag)
    if config["user"] != "10001:10001":
        raise ReleaseCheckError(f"the image runs as {config['user']!r}, not 10001:10001")
    if config["entrypoint"] != ["wmap", "serve", "--host", "0.0.0.0"]:
        raise ReleaseCheckError(f"unexpected entrypoint {config['entrypoint']}")
    said = run_in_image(tool, tag, ["wmap", "--version"]).strip()
    if v not in said:
        raise ReleaseCheckError(f"wmap --version in the image says {said!r}")
    whoami = run_in_image(tool, tag, ["python", "-c", "import os; print(os.getuid())"]).strip()
    sbom = json.loads(run_in_image(tool, tag, ["python", "-c", "import sys; sys.stdout.write(open("
                                               "'/opt/sbom/workload-map-server.cdx.json').read())"]))
    components = {re.sub(r"[-_.]+", "-", c["name"]).lower(): c.get("version") for c in sbom.get("components", [])}
    root = sbom.get("metadata", {}).get("component", {})
    expected = locked_runtime()
    components.pop("workload-map-server", None)
    if components != expected:
        missing = sorted(set(expected.items()) - set(components.items()))
        extra = sorted(set(components.items()) - set(expected.items()))
        raise ReleaseCheckError(f"the SBOM does not list exactly the runtime lock: missing {missing}, extra {extra}")
    if root.get("name") != "workload-map-server" or root.get("version") != v:
        raise ReleaseCheckError(f"the SBOM's root component is {root.get('name')} {root.get('version')}")
    print(f"image: {tag}: user 10001:10001 (uid {whoami} inside), {said}, SBOM ({sbom.get('specVersion')}) "
          f"lists the {len(expected)} locked runtime packages")
    return {"user": config["user"], "version": said, "uid": whoami, "components": len(expected)}


def save_image(tool: str, tag: str, out: Path, v: str) -> Path:
    """Write the image as an OCI archive into ``out``."""
    archive = out / f"workload-map-server-{v}.oci.tar"
    archive.unlink(missing_ok=True)
    if tool == "docker":
        run(["docker", "save", "-o", str(archive), tag])
    else:
        run([tool, "push", tag, f"oci-archive:{archive}"])
    return archive


def find_helm() -> str | None:
    """``$WMAP_HELM``, the cache tests/deploy/build-helm.sh fills, or helm on PATH."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "workload-map-server"
    for candidate in (os.environ.get("WMAP_HELM"), str(cache / f"helm-{HELM_VERSION}" / "helm"), shutil.which("helm")):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def build_chart(helm: str, out: Path, v: str) -> Path:
    """Lint (no notes) and package the chart; its .tgz."""
    for values in [None, *sorted((CHART_DIR / "ci").glob("*-values.yaml"))]:
        said = run([helm, "lint", "--strict", str(CHART_DIR), *(["--values", str(values)] if values else [])])
        if re.search(r"\[(INFO|WARNING|ERROR)\]", said):
            raise ReleaseCheckError(f"helm lint ({values.name if values else 'defaults'}): {said}")
    chart = yaml.safe_load((CHART_DIR / "Chart.yaml").read_text())
    run([helm, "package", str(CHART_DIR), "--destination", str(out)])
    package = out / f"workload-map-server-{chart['version']}.tgz"
    with tarfile.open(package) as tar:
        packaged = yaml.safe_load(tar.extractfile("workload-map-server/Chart.yaml").read())  # type: ignore[union-attr]
    rendered = run([helm, "template", "r", str(package)])
    if str(packaged["appVersion"]) != v or f"workload-map-server:{v}" not in rendered:
        raise ReleaseCheckError(f"the packaged chart's appVersion/default image tag is not {v}")
    print(f"chart: {package.name}: helm lint --strict clean (defaults and ci/*-values.yaml), appVersion {v}, "
          f"default image tag {v}")
    return package


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="deploy/release/check.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tag", help="the release tag (vX.Y.Z) to check against the version")
    p.add_argument("--standin", action="store_true", help="build the image on the local stand-in base (no registry)")
    p.add_argument("--allow-missing", action="store_true", help="report an artifact no tool here can build, go on")
    p.add_argument("--out", type=Path, default=ROOT / "dist" / "release")
    args = p.parse_args(argv)
    try:
        v = check_versions(args.tag)
        args.out.mkdir(parents=True, exist_ok=True)
        artifacts = [build_wheel(args.out, v)]
        tool = builder()
        if tool is None:
            if not args.allow_missing:
                raise ReleaseCheckError("no image builder (podman, buildah or docker) is installed")
            print("image: SKIPPED, no podman, buildah or docker here")
        else:
            tag = f"{IMAGE}:{v}"
            build_image(tool, tag, base=standin_base() if args.standin else None)
            verify_image(tool, tag, v)
            artifacts.append(save_image(tool, tag, args.out, v))
        helm = find_helm()
        if helm is None:
            if not args.allow_missing:
                raise ReleaseCheckError("helm not found ($WMAP_HELM, the build-helm.sh cache, PATH)")
            print("chart: SKIPPED, no helm here (bash tests/deploy/build-helm.sh builds it)")
        else:
            artifacts.append(build_chart(helm, args.out, v))
    except ReleaseCheckError as exc:
        print(f"release-check FAILED: {exc}", file=sys.stderr)
        return 1
    sums = "".join(f"{hashlib.sha256(a.read_bytes()).hexdigest()}  {a.name}\n" for a in artifacts)
    (args.out / "SHA256SUMS").write_text(sums)
    print(f"release-check OK: {len(artifacts)} artifacts in {args.out}\n{sums}", end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
