"""Fetch the pinned GraphiQL assets from the npm registry (``make install``, the Dockerfile).

``python graphiql/fetch.py [--out DIR] [--tarballs DIR]``: for every package of
``assets.lock.json`` beside this file, ``npm pack NAME@VERSION`` (skipped when the tarball
is already in ``--tarballs``), check the tarball's sha512 against the pinned integrity
(https://w3c.github.io/webappsec-subresource-integrity/ format, as npm's lockfiles) and
unpack its ``package/`` files into ``DIR/NAME@VERSION/`` (default ``graphiql/assets``).

Never fails a build: without npm or a reachable registry it prints a warning and exits 0
(the server then loads GraphiQL from the CDN and says so). A tarball whose digest differs
is refused (exit 1): that is tampering or a wrong pin, not a network problem.
Standard library only.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
LOCK = HERE / "assets.lock.json"


def integrity(data: bytes) -> str:
    """``sha512-<base64>`` of ``data``."""
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def tarball_name(spec: str) -> str:
    """The file name ``npm pack`` gives ``spec`` (``@graphiql/plugin-explorer@1.0.2`` -> ``graphiql-plugin-explorer-1.0.2.tgz``)."""
    name, _, version = spec.rpartition("@")
    return f"{name.lstrip('@').replace('/', '-')}-{version}.tgz"


def pack(spec: str, directory: Path) -> Path | None:
    """The tarball of ``spec`` in ``directory``, downloaded with ``npm pack`` when missing (None: npm failed)."""
    path = directory / tarball_name(spec)
    if path.exists():
        return path
    npm = shutil.which("npm")
    if npm is None:
        print("warning: npm not found: GraphiQL will load its assets from the CDN", file=sys.stderr)
        return None
    done = subprocess.run([npm, "pack", spec, "--silent", "--pack-destination", str(directory)],
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0 or not path.exists():
        print(f"warning: npm pack {spec} failed: {done.stderr.strip()[-300:]}: GraphiQL will load its assets "
              "from the CDN", file=sys.stderr)
        return None
    return path


def unpack(tarball: Path, target: Path) -> None:
    """Regular files under ``package/`` of ``tarball`` into ``target`` (no links, no path escapes)."""
    staging = target.with_name(target.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    with tarfile.open(tarball, "r:gz") as archive:
        for member in archive.getmembers():
            parts = Path(member.name).parts
            if not member.isfile() or len(parts) < 2 or ".." in parts:
                continue
            destination = staging.joinpath(*parts[1:])
            destination.parent.mkdir(parents=True, exist_ok=True)
            source = archive.extractfile(member)
            assert source is not None
            destination.write_bytes(source.read())
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)  # whole package or nothing


def main(argv: list[str] | None = None) -> int:
    """Fetch, check and unpack every pinned package; the exit code (0 also when npm is unusable)."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=HERE / "assets")
    p.add_argument("--tarballs", type=Path, default=None, help="directory of tarballs already packed")
    args = p.parse_args(argv)
    pinned: dict[str, str] = json.loads(LOCK.read_text(encoding="utf-8"))["packages"]
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="wmap-graphiql-") as scratch:
        tarballs = args.tarballs or Path(scratch)
        for spec, expected in pinned.items():
            if (args.out / spec / "package.json").exists() and (args.out / f"{spec}.integrity").exists() \
                    and (args.out / f"{spec}.integrity").read_text().strip() == expected:
                continue  # unpacked earlier from a tarball that matched this pin
            tarball = pack(spec, tarballs)
            if tarball is None:
                return 0
            actual = integrity(tarball.read_bytes())
            if actual != expected:
                print(f"error: {tarball.name}: integrity {actual} differs from the pinned {expected} "
                      f"({LOCK.name}); refusing it", file=sys.stderr)
                return 1
            unpack(tarball, args.out / spec)
            (args.out / f"{spec}.integrity").write_text(expected + "\n")
    print(f"GraphiQL assets: {len(pinned)} packages checked in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
