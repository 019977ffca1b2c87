"""The default ``-o`` of each command: flag, else ``$WMAP_OUTPUT``, else the config file, else built in.

Config file: ``$WMAP_CONFIG``, else ``${XDG_CONFIG_HOME:-~/.config}/wmap/config.yaml``, a YAML
mapping; its ``output`` key is the default for every command, and ``outputs: {get: wide, ...}``
overrides it per command. ``$WMAP_OUTPUT`` and the global ``output`` apply to the commands
offering that format (``describe`` has no ``table``); the others keep their built-in default.
Order: per-command entry, ``$WMAP_OUTPUT``, global ``output``, built-in.

Raises ``InvalidRequest`` (exit 2) when the config file is not a YAML mapping or a per-command
entry names a format that command does not offer.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workload_map.errors import InvalidRequest

OUTPUTS: dict[str, tuple[tuple[str, ...], str]] = {
    "describe": (("tree", "json", "yaml"), "tree"),
    "get": (("table", "wide", "name", "json", "yaml"), "table"),
    "catalog": (("table", "json"), "table"),
    "definitions": (("table", "json", "yaml"), "table"),
}
"""Command -> (offered formats, built-in default)."""


def config_path(environ: Mapping[str, str]) -> Path:
    """Where the config file is looked for (it need not exist)."""
    if environ.get("WMAP_CONFIG"):
        return Path(environ["WMAP_CONFIG"])
    base = environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "wmap" / "config.yaml"


def _config(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    import yaml

    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise InvalidRequest(f"cannot read the wmap config file {path}: {exc}") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise InvalidRequest(f"the wmap config file {path} must be a YAML mapping (output: json)")
    return loaded


def default_output(command: str, environ: Mapping[str, str] | None = None) -> str:
    """The ``-o`` of ``command`` when the flag is not given."""
    env = os.environ if environ is None else environ
    offered, builtin = OUTPUTS[command]
    path = config_path(env)
    config = _config(path)
    per_command = (config.get("outputs") or {}).get(command) if isinstance(config.get("outputs"), dict) else None
    if per_command is not None:
        if per_command not in offered:
            raise InvalidRequest(f"{path}: outputs.{command} must be one of {', '.join(offered)}, got {per_command!r}")
        return str(per_command)
    for value in (env.get("WMAP_OUTPUT"), config.get("output")):
        if value and value in offered:
            return str(value)
    return builtin
