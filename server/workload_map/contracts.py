"""The published contracts consumers generate clients from, kept in the repository's ``schema/``.

``python -m workload_map.contracts`` prints their names; ``--write`` writes them into
``schema/`` (or ``--dir DIR``) and ``--check`` exits 1 naming every file that differs from
what the code serves (``make lint`` runs it, so CI fails on drift). The three documents:

- ``schema.graphql``: the GraphQL SDL of ``/graphql`` (:func:`workload_map.graphql.schema.sdl`);
- ``openapi.json``: the OpenAPI 3.1 document of the REST routes, as ``/openapi.json`` serves it
  with the default settings (:func:`workload_map.api.openapi.openapi_document`);
- ``karta.schema.json``: a JSON Schema (draft 2020-12) of one Karta object, the
  ``openAPIV3Schema`` of the ``kartas.run.ai`` CustomResourceDefinition this package installs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from workload_map.api.openapi import openapi_document
from workload_map.app import create_app
from workload_map.config import Settings
from workload_map.paths import REPO_ROOT, karta_crd_file
from workload_map.graphql.schema import sdl

SCHEMA_DIR = REPO_ROOT / "schema"
"""Where the contracts live in a checkout (the top-level ``schema/``)."""


def _json(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def karta_json_schema() -> dict[str, Any]:
    """The JSON Schema of a Karta object, from the CRD's served version.

    Returns:
        The ``openAPIV3Schema`` of the CRD's storage version with ``$schema``, ``$id`` and
        ``title`` added.
    """
    crd = yaml.safe_load(karta_crd_file().read_text(encoding="utf-8"))
    version = next(v for v in crd["spec"]["versions"] if v.get("storage"))
    group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"https://{group}/schemas/{kind.lower()}-{version['name']}.json",
            "title": f"{kind} ({group}/{version['name']})", **version["schema"]["openAPIV3Schema"]}


def documents() -> dict[str, str]:
    """Every contract by file name, as text (the SDL as GraphQL, the others as sorted JSON)."""
    app = create_app(Settings())
    return {"schema.graphql": sdl(),
            "openapi.json": _json(openapi_document(list(app.routes))),
            "karta.schema.json": _json(karta_json_schema())}


def stale(folder: Path) -> list[str]:
    """Names of the contracts in ``folder`` that are missing or differ from :func:`documents`."""
    return [name for name, text in documents().items()
            if not (folder / name).is_file() or (folder / name).read_text(encoding="utf-8") != text]


def main(argv: list[str] | None = None) -> int:
    """Run the command (see the module docstring); returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m workload_map.contracts", description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=SCHEMA_DIR, help="folder of the contracts (default: schema/)")
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help="write every contract")
    action.add_argument("--check", action="store_true", help="exit 1 when a contract is stale")
    args = parser.parse_args(argv)
    if args.write:
        args.dir.mkdir(parents=True, exist_ok=True)
        for name, text in documents().items():
            (args.dir / name).write_text(text, encoding="utf-8")
        return 0
    if args.check:
        names = stale(args.dir)
        for name in names:
            print(f"{args.dir / name} is stale: run `python -m workload_map.contracts --write`", file=sys.stderr)
        return 1 if names else 0
    print("\n".join(documents()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
