"""The source layout (issue 26 item 1): folders named as imported, no symbolic links, every folder packaged.

``server/`` is the source root of the one package ``workload_map``; pyproject.toml lists its
packages one by one (the two data packages ``workload_map.catalog`` and
``workload_map.crds`` are mapped from ``catalog/`` and ``deploy/crds/``), so a new folder
that is not listed would be missing from the wheel: this test names it.
"""

from __future__ import annotations

import shutil
import subprocess
import tomllib

import pytest

from workload_map.paths import REPO_ROOT

PACKAGE = REPO_ROOT / "server" / "workload_map"


def _setuptools() -> dict[str, object]:
    return tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]


def test_every_folder_of_the_package_is_listed_in_pyproject() -> None:
    listed = set(_setuptools()["packages"])  # type: ignore[arg-type]
    folders = {".".join(("workload_map", *p.relative_to(PACKAGE).parts)).rstrip(".")
               for p in [PACKAGE, *PACKAGE.rglob("*")] if p.is_dir() and p.name != "__pycache__"}
    assert folders - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"
    mapped = {name for name in listed if not (PACKAGE.parent / name.replace(".", "/")).is_dir()}
    assert mapped == {"workload_map.catalog", "workload_map.crds"}


def test_data_packages_map_to_the_top_level_folders() -> None:
    assert _setuptools()["package-dir"] == {"": "server", "workload_map.catalog": "catalog",
                                            "workload_map.crds": "deploy/crds"}


def test_the_package_reads_the_catalog_and_crd_where_they_live() -> None:
    from workload_map.paths import default_catalog_dir, default_sample_dir, karta_crd_file

    assert default_catalog_dir().resolve() == (REPO_ROOT / "catalog").resolve()
    assert karta_crd_file().resolve() == (REPO_ROOT / "deploy" / "crds" / "kartas.run.ai.yaml").resolve()
    assert default_sample_dir().resolve() == (PACKAGE / "sample").resolve()
    assert len(list(default_catalog_dir().glob("*.yaml"))) == 35


@pytest.mark.skipif(shutil.which("git") is None or not (REPO_ROOT / ".git").exists(), reason="not a git checkout")
def test_no_symbolic_link_in_the_repository() -> None:
    staged = subprocess.run(["git", "ls-files", "-s"], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    links = [line.split("\t", 1)[1] for line in staged.stdout.splitlines() if line.startswith("120000")]
    assert links == []
