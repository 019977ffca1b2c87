"""The definition studio's evaluation: one Karta and some objects -> findings, path outputs, view.

Pure (no I/O); the server runs it as a job of the resolver workers (``worker.StudioJob``,
``workload_map.api.studio``) so that no jq runs in the serving process and a runaway
expression is ended with its worker at the resolver's budget.

Input: a Karta's YAML/JSON text, Kubernetes objects and optionally the root's name. Output
(see :func:`evaluate`)::

    {"valid": bool, "definition": {name, group, version, kind} | null,
     "problems": [{path, message}],            # validation findings with field paths
     "paths": [{path, expression, component, object, output | error}],
     "root": {kind, namespace, name} | null,   # the object the definition was resolved on
     "phase": str | null, "phases": [str], "rawPhase": str | null,
     "view": <WorkloadView.to_dict()> | null, "note": str}

Each jq path is evaluated on what the resolver reads it on: pod selector paths on each
given pod (one ``name: output`` line per pod), every other path on the root object
(``object`` names it). Output values are cut at :data:`OUTPUT_CAP` characters of JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from workload_map.definitions.load import check_definition, load_documents
from workload_map.definitions.model import Component, Definition
from workload_map.definitions.validate import jq_fields
from workload_map.errors import JqError, ServerError
from workload_map.gvk import GVK
from workload_map.jq import Document, compile_program
from workload_map.resolution.resolver import resolve

OUTPUT_CAP = 4000
"""Most characters of one path's output (JSON) returned; longer ones end with an ellipsis."""
PODS_SHOWN = 20
"""Most pods a pod selector path is shown on."""


def _identity(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    return {"kind": obj.get("kind"), "namespace": meta.get("namespace"), "name": meta.get("name")}


def _gvk(obj: Mapping[str, Any]) -> GVK | None:
    try:
        return GVK.of(obj)
    except ValueError:
        return None


def _shown(values: list[Any]) -> str:
    text = json.dumps(values[0] if len(values) == 1 else values, sort_keys=True, default=str)
    return text if len(text) <= OUTPUT_CAP else text[:OUTPUT_CAP] + "…"


def _component_of(definition: Definition, path: str) -> Component:
    """The component whose field ``path`` is (the longest component path it starts with)."""
    owners = [c for c in definition.components if path.startswith(c.path + ".")]
    return max(owners, key=lambda c: len(c.path)) if owners else definition.components[0]


def _run(expression: str, target: Mapping[str, Any]) -> dict[str, str]:
    try:
        return {"output": _shown(compile_program(expression).all(Document(target)))}
    except (JqError, ServerError) as exc:
        return {"error": str(exc)}


def _on_pods(expression: str, pods: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A pod selector path on each given pod (at most :data:`PODS_SHOWN`), one ``name: output`` line each."""
    if not pods:
        return {"object": None, "error": "no given pod to evaluate this pod selector on"}
    lines, errors = [], []
    for pod in pods[:PODS_SHOWN]:
        name = (pod.get("metadata") or {}).get("name")
        result = _run(expression, pod)
        lines.append(f"{name}: {result.get('output', 'error')}")
        errors += [f"{name}: {result['error']}"] if "error" in result else []
    shown = {"kind": "Pod", "namespace": None, "name": f"{min(len(pods), PODS_SHOWN)} of {len(pods)} pods"}
    return {"object": shown, **({"error": "; ".join(errors)} if errors else {"output": "\n".join(lines)})}


def path_outputs(definition: Definition, root: Mapping[str, Any],
                 pods: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every jq path of ``definition`` with its output (or error) on what the resolver reads it on.

    The resolver (``workload_map.resolution.resolver``) reads instance ids, pod specs,
    scale, status and suspend paths of every component on the root object, and pod
    selector paths on pods.
    """
    out: list[dict[str, Any]] = []
    for path, expression in jq_fields(definition):
        row: dict[str, Any] = {"path": path, "expression": expression,
                               "component": _component_of(definition, path).name}
        if ".podSelector." in path:
            row.update(_on_pods(expression, pods))
        else:
            row.update(object=_identity(root), **_run(expression, root))
        out.append(row)
    return out


def _parse(text: str) -> tuple[Definition | None, list[dict[str, str]]]:
    try:
        docs = load_documents(text, source="definition")
    except ServerError as exc:
        return None, [{"path": "", "message": str(exc)}]
    if len(docs) != 1:
        return None, [{"path": "", "message": f"expected exactly one definition document, got {len(docs)}"}]
    definition, problems = check_definition(docs[0])
    return definition, [p.to_dict() for p in problems]


def _pick_root(definition: Definition, objects: Sequence[Mapping[str, Any]],
               name: str | None) -> Mapping[str, Any] | None:
    wanted = definition.gvk.group_kind
    roots = [o for o in objects if (g := _gvk(o)) is not None and g.group_kind == wanted
             and (name is None or (o.get("metadata") or {}).get("name") == name)]
    return roots[0] if roots else None


def evaluate(definition_text: str, objects: Sequence[Mapping[str, Any]], *, root_name: str | None = None) -> dict[str, Any]:
    """The studio answer for a definition text and objects (shape in the module docstring)."""
    definition, problems = _parse(definition_text)
    answer: dict[str, Any] = {"valid": definition is not None, "definition": None, "problems": problems,
                              "paths": [], "root": None, "phase": None, "phases": [], "rawPhase": None,
                              "view": None, "note": ""}
    if definition is None:
        answer["note"] = "the definition is not valid: fix the findings to see path outputs and the tree"
        return answer
    gvk = definition.gvk
    answer["definition"] = {"name": definition.name, "group": gvk.group, "version": gvk.version, "kind": gvk.kind}
    root = _pick_root(definition, objects, root_name)
    if root is None:
        answer["note"] = f"no given object is a {gvk.kind} ({gvk.group or 'core'}); give one to resolve"
        return answer
    pods = [o for o in objects if o.get("kind") == "Pod" and o.get("apiVersion") == "v1"]
    others = [o for o in objects if o is not root and o not in pods]
    answer["root"] = _identity(root)
    answer["paths"] = path_outputs(definition, root, pods)
    view = resolve(definition, root, objects=others, pods=pods, origin="studio")
    answer.update(phase=view.phase.value, phases=[p.value for p in view.phases], rawPhase=view.raw_phase,
                  view=view.to_dict())
    return answer
