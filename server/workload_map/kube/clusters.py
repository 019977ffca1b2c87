"""Which clusters ``wmap serve`` reads: one :class:`ClusterTarget` per kubeconfig context.

Rules (kubectl's kubeconfig merging: https://kubernetes.io/docs/concepts/configuration/organize-cluster-access-kubeconfig/#merging-kubeconfig-files):

* several ``--kubeconfig`` paths are merged as ``$KUBECONFIG`` is (``:``-joined, the first
  file to define a context wins); without ``--kubeconfig`` the usual source is used
  (``$KUBECONFIG``, ``~/.kube/config``);
* several ``--context`` names: one cluster per context, looked up in that merged config;
* several ``--kubeconfig`` paths and no ``--context``: one cluster per file, each with the
  file's own ``current-context``;
* anything else (at most one context and one merged config): one cluster, the
  single-cluster path of ``workload_map.app`` (unchanged behaviour).

A cluster's name is its context name: what views, filters and ``gpuSummary(groupBy:
CLUSTER)`` report. No kubernetes client is imported here (only YAML to read a file's
``current-context``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from msgspec import Struct
import yaml

from workload_map.errors import InvalidRequest


class ClusterTarget(Struct, frozen=True):
    """One cluster to read.

    Attributes:
        name: the context name (reported as the workload's ``cluster``).
        kubeconfig: kubeconfig path(s), ``:``-joined; None for the default source.
        context: the context to load.
    """

    name: str
    kubeconfig: str | None
    context: str


def current_context(path: str) -> str:
    """The ``current-context`` of one kubeconfig file.

    Raises:
        InvalidRequest: the file cannot be read, is not YAML, or names no current-context.
    """
    try:
        doc = yaml.safe_load(Path(path).expanduser().read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise InvalidRequest(f"--kubeconfig {path}: cannot read it: {exc}") from None
    name = doc.get("current-context") if isinstance(doc, dict) else None
    if not isinstance(name, str) or not name:
        raise InvalidRequest(f"--kubeconfig {path}: current-context is not set; name the context with --context")
    return name


def cluster_targets(kubeconfigs: Sequence[str], contexts: Sequence[str]) -> list[ClusterTarget]:
    """The clusters to read when there are several, else ``[]`` (see module docstring).

    Args:
        kubeconfigs: ``--kubeconfig`` values in order (each may itself be ``:``-joined).
        contexts: ``--context`` values in order.

    Returns:
        Two or more targets, or ``[]`` for the single-cluster path.

    Raises:
        InvalidRequest: a context named twice, two files with the same current-context, or
            an unreadable file.
    """
    merged = os.pathsep.join(kubeconfigs) if kubeconfigs else None
    if len(contexts) > 1:
        targets = [ClusterTarget(c, merged, c) for c in contexts]
    elif len(kubeconfigs) > 1 and not contexts:
        targets = [ClusterTarget(current_context(p), p, current_context(p)) for p in kubeconfigs]
    else:
        return []
    seen: set[str] = set()
    for target in targets:
        if target.name in seen:
            raise InvalidRequest(f"cluster {target.name!r} is given twice (--context / current-context of "
                                 "--kubeconfig); each context is one cluster")
        seen.add(target.name)
    return targets
