"""``python -m schema [--check]``: print the SDL, or fail when schema/schema.graphql is stale."""

from __future__ import annotations

import sys
from pathlib import Path

from workload_map_schema.schema import sdl

SDL_PATH = Path(__file__).with_name("schema.graphql")


def main(argv: list[str]) -> int:
    """Print the SDL; with ``--write`` update the file; with ``--check`` compare it."""
    text = sdl()
    if "--write" in argv:
        SDL_PATH.write_text(text, encoding="utf-8")
        return 0
    if "--check" in argv:
        if SDL_PATH.read_text(encoding="utf-8") != text:
            print(f"{SDL_PATH} is stale: run `python -m schema --write`", file=sys.stderr)
            return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
