"""YAML read into JSON's types: the loader of snapshot files and ``describe -f`` manifests.

A Kubernetes object is JSON: the API server stores and serves JSON, and kubectl turns a
YAML manifest into JSON before sending it. YAML's safe schema knows more types than JSON,
so ``yaml.safe_load`` of a hand-written manifest can give values no live object holds:
an unquoted ``2024-01-01T00:00:00Z`` becomes a ``datetime``, ``2024-01-01`` a ``date``,
and the explicit tags ``!!binary``, ``!!set``, ``!!omap`` and ``!!pairs`` give ``bytes``,
a ``set`` and lists of tuples. :class:`JSONLoader` (libyaml's ``CSafeLoader`` when PyYAML
has it, else ``SafeLoader``) constructs those as the JSON they stand for instead:

- a timestamp is the text written (``"2024-01-01T00:00:00Z"``, as in a live object);
- ``!!binary`` is its base64 text without the line breaks (a Secret's ``data`` values
  are base64 strings in JSON);
- ``!!set`` is a map of its members to null (a YAML set is such a map);
- ``!!omap`` and ``!!pairs`` are lists of one-entry maps (how they are written).

Everything else is as the safe loader gives it. The cache's compaction relies on this
(``workload_map.kube.compact``: its table is exact for JSON's types).
"""

from __future__ import annotations

from typing import Any

import yaml

_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class JSONLoader(_Base):  # type: ignore[misc]  # the base is chosen at import time
    """The safe loader with YAML's extra types constructed as JSON (module docstring)."""


def _text(loader: Any, node: yaml.ScalarNode) -> str:
    return str(loader.construct_scalar(node))


def _base64(loader: Any, node: yaml.ScalarNode) -> str:
    return "".join(str(loader.construct_scalar(node)).split())


def _members(loader: Any, node: yaml.MappingNode) -> dict[Any, None]:
    return dict.fromkeys(loader.construct_mapping(node, deep=True))


def _entries(loader: Any, node: yaml.SequenceNode) -> list[Any]:
    return list(loader.construct_sequence(node, deep=True))


JSONLoader.add_constructor("tag:yaml.org,2002:timestamp", _text)
JSONLoader.add_constructor("tag:yaml.org,2002:binary", _base64)
JSONLoader.add_constructor("tag:yaml.org,2002:set", _members)
JSONLoader.add_constructor("tag:yaml.org,2002:omap", _entries)
JSONLoader.add_constructor("tag:yaml.org,2002:pairs", _entries)
