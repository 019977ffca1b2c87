"""Shared inputs of the service tests: a Demo kind whose status loops on one label.

``LOOPING`` maps ``.status.p`` to phases, except that an object labelled ``loop: "yes"``
evaluates ``def f: f; f``, which never returns: static checks allow it (it is plain
recursion) and the registration trial's samples do not carry the label, so it is exactly
the definition of issue 11 that used to hang the server.
"""

from __future__ import annotations

from typing import Any

from workload_map.definitions import load_definition
from workload_map.definitions.model import Definition

LOOP_PATH = 'if .metadata.labels.loop == "yes" then (def f: f; f) else (.status.p // "up") end'


def demo_definition(path: str = LOOP_PATH, name: str = "demo") -> Definition:
    """The Demo definition: ``up`` -> Running, ``wait`` -> Initializing, ``done`` -> Completed."""
    return load_definition({"apiVersion": "run.ai/v1alpha1", "kind": "Karta", "metadata": {"name": name},
                            "spec": {"structureDefinition": {"rootComponent": {
                                "name": "r", "kind": {"group": "example.com", "version": "v1", "kind": "Demo"},
                                "statusDefinition": {"phaseDefinition": {"path": path},
                                                     "statusMappings": {"running": [{"byPhase": "up"}],
                                                                        "initializing": [{"byPhase": "wait"}],
                                                                        "completed": [{"byPhase": "done"}]}}}}}})


def demo(name: str, namespace: str = "n", *, loop: bool = False, phase: str | None = None) -> dict[str, Any]:
    """One Demo object (``loop`` sets the label that makes ``LOOP_PATH`` loop)."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"}
    if loop:
        meta["labels"] = {"loop": "yes"}
    obj: dict[str, Any] = {"apiVersion": "example.com/v1", "kind": "Demo", "metadata": meta, "spec": {}}
    if phase is not None:
        obj["status"] = {"p": phase}
    return obj

SLOW_PATH = ('if .metadata.labels.slow == "yes" then ([limit(600000; def r: 1, r; r)] | length | "up") '
             'else (.status.p // "up") end')
"""About 1.5 s for an object labelled ``slow: "yes"`` (600,000 generator steps), else instant."""


def slow_demo(name: str, namespace: str = "n") -> dict[str, Any]:
    """A Demo object that takes ``SLOW_PATH`` down its slow branch."""
    obj = demo(name, namespace)
    obj["metadata"]["labels"] = {"slow": "yes"}
    return obj
