"""The wheel works on its own (issue 16 item 1): built, installed (not editable) into a fresh venv, run elsewhere.

``pip wheel --no-deps --no-build-isolation .`` builds it with the locked build backend
(requirements/build.txt, installed by ``make install``); a new virtualenv (no system
site-packages) installs the runtime lock (requirements/runtime.txt) with
``--require-hashes --no-deps``, then the wheel with ``--no-deps``, and ``pip check`` must
find every dependency satisfied: the lock is complete and agrees with the wheel's metadata,
as in the image (Dockerfile). The commands run from a
directory outside the repository with no ``WMAP_*`` variable and no ``PYTHONPATH``, so the
catalog, the sample and the CRD can only come from inside the installed package.

Marked ``cluster`` (the heavy tier ``make test`` runs after the fast one) and ``slow``: it
takes about a minute, most of it installing the dependencies.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from workload_map.paths import REPO_ROOT

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def _run(argv: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WMAP_") and k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(argv)}: {done.stderr[-2000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """``(venv bin directory, a working directory outside the repository)``."""
    root = tmp_path_factory.mktemp("wheel")
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(root / "dist"),
          str(REPO_ROOT)], root)
    wheels = list((root / "dist").glob("workload_map_server-*.whl"))
    assert len(wheels) == 1, wheels
    _run([sys.executable, "-m", "venv", str(root / "venv")], root)
    bin_dir = root / "venv" / "bin"
    pip = [str(bin_dir / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps"]
    _run([*pip, "--require-hashes", "-r", str(REPO_ROOT / "requirements" / "runtime.txt")], root)
    _run([*pip, str(wheels[0])], root)
    _run([str(bin_dir / "python"), "-m", "pip", "check"], root)
    work = root / "elsewhere"
    work.mkdir()
    return bin_dir, work


def test_the_installed_package_reads_its_own_catalog_sample_and_crd(installed: tuple[Path, Path]) -> None:
    bin_dir, work = installed
    probe = ("import workload_map.paths as c; print(c.__file__); print(c.default_catalog_dir()); "
             "print(c.default_sample_dir()); print(c.karta_crd_file().is_file())")
    lines = _run([str(bin_dir / "python"), "-c", probe], work).stdout.split()
    package, catalog, sample, crd = Path(lines[0]).parent, Path(lines[1]), Path(lines[2]), lines[3]
    venv = bin_dir.parent
    assert venv in package.parents and REPO_ROOT not in package.parents  # not the checkout
    assert catalog == package / "catalog" and not catalog.is_symlink()  # real files in the wheel
    assert len(list(catalog.glob("*.yaml"))) == 35
    assert sample == package / "sample" and len(list(sample.glob("*.yaml"))) == 35  # one file per catalog type
    assert crd == "True"


def test_the_venv_holds_exactly_the_runtime_lock_and_no_tool(installed: tuple[Path, Path]) -> None:
    bin_dir, work = installed
    listed = json.loads(_run([str(bin_dir / "python"), "-m", "pip", "list", "--format", "json"], work).stdout)
    versions = {p["name"].lower().replace("_", "-"): p["version"] for p in listed}
    lock = (REPO_ROOT / "requirements" / "runtime.txt").read_text()
    pinned = dict(line.split(" ", 1)[0].split("==") for line in lock.splitlines() if "==" in line
                  and not line.startswith((" ", "#")))
    assert versions.pop("workload-map-server") == "0.1.0"
    for bundled in ("pip", "setuptools"):  # what `python -m venv` puts in every venv
        versions.pop(bundled, None)
    assert versions == {name.lower(): v for name, v in pinned.items()}
    assert not {"pytest", "ruff", "mypy", "uv"} & set(versions)


def test_wmap_catalog_lists_the_35_built_in_definitions(installed: tuple[Path, Path]) -> None:
    bin_dir, work = installed
    body = json.loads(_run([str(bin_dir / "wmap"), "catalog", "-o", "json"], work).stdout)
    assert body["count"] == 35 and len(body["items"]) == 35
    assert {"jobset-x-k8s-io-jobset-v1alpha2", "ray-io-raycluster-v1", "core-pod-v1"} <= {
        i["name"] for i in body["items"]}


def test_wmap_describe_resolves_a_bundled_sample_file(installed: tuple[Path, Path]) -> None:
    bin_dir, work = installed
    sample = Path(_run([str(bin_dir / "python"), "-c", "import workload_map.paths as c; print(c.default_sample_dir())"],
                       work).stdout.strip())
    out = _run([str(bin_dir / "wmap"), "describe", "-f", str(sample / "jobset-x-k8s-io-jobset-v1alpha2.yaml"),
                "jobset/llm-pretrain", "-o", "json"], work).stdout
    view = json.loads(out)
    # llm-pretrain: a leader job of 1 pod and a worker job of 2 pods, 4 GPUs each -> 3 pods, 12 GPUs
    assert (view["namespace"], view["phase"]) == ("ml-training", "Running")
    assert view["replicas"] == {"desired": 3, "current": 3, "ready": 3}
    assert (view["gpu"]["requestedBySpec"], view["gpu"]["requestedByPods"], view["gpu"]["allocated"]) == (12, 12, 12)
    version = _run([str(bin_dir / "wmap"), "--version"], work).stdout
    assert version.startswith("wmap ") and "unknown" not in version
