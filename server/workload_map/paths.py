"""Where the package's files are: the repository root, and the folders shipped in the package.

Kept apart from :mod:`workload_map.config` (the settings and their records) so that a
one-shot command that only needs the catalog folder does not build the settings classes
(about 3 ms of ``wmap describe -f``: docs/engine-speed.md).
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def package_path(package: str, *parts: str) -> Path:
    """A folder or file shipped inside this package: ``parts`` inside ``workload_map.<package>``.

    ``package`` is a dotted folder of the package (``sample``, ``catalog``, ``crds``).
    ``workload_map.catalog`` and ``workload_map.crds`` are the top-level ``catalog/`` and
    ``deploy/crds/`` folders, mapped into the package by pyproject.toml's ``package-dir``; the
    folder is found by the import system (:func:`importlib.util.find_spec`), so the same call works
    in an editable install, a wheel and the container image.

    Raises:
        FileNotFoundError: the folder is not part of the installed package.
    """
    from importlib.util import find_spec

    spec = find_spec(f"workload_map.{package}")
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    if not locations:
        raise FileNotFoundError(f"workload_map.{package} is not installed with the package")
    return Path(locations[0]).joinpath(*parts)


def default_catalog_dir() -> Path:
    """``$WMAP_CATALOG_DIR``, else the catalog installed with the package (``catalog/``)."""
    return Path(os.environ.get("WMAP_CATALOG_DIR") or package_path("catalog"))


def default_sample_dir() -> Path:
    """``$WMAP_SAMPLE_DIR``, else the bundled sample snapshot served when no cluster is configured."""
    return Path(os.environ.get("WMAP_SAMPLE_DIR") or package_path("sample"))


def karta_crd_file() -> Path:
    """The ``kartas.run.ai`` CustomResourceDefinition installed with the package (``deploy/crds/``)."""
    return package_path("crds", "kartas.run.ai.yaml")


def default_graphiql_assets_dir() -> Path:
    """``$WMAP_GRAPHIQL_ASSETS``, else ``graphiql/assets`` of the repository (``graphiql/fetch.py`` fills it)."""
    return Path(os.environ.get("WMAP_GRAPHIQL_ASSETS") or REPO_ROOT / "graphiql" / "assets")
