"""Degraded from evidence the status mappings cannot see: failing children, counts that do not add up.

A Karta's status mappings read the root object only. Two extension annotations of our catalog
(docs/definition-format.md section 12) add what an operator reports elsewhere:

* ``workload-map.run.ai/failing-children``: comma-separated child kinds (``Kind.group``, the
  core group ``Kind``) whose objects among the workload's descendants are *failing* when a
  ``FailureTarget`` or ``Failed`` condition is ``True``. Kubernetes "Jobs" (pod failure
  policy, termination of Job pods): the Job controller adds ``FailureTarget=True`` as soon as
  it decides the Job fails and only adds ``Failed=True`` once its pods are gone, so between the
  two the Job is counted in none of a JobSet's ``replicatedJobsStatus`` buckets.
* ``workload-map.run.ai/degraded-when``: a jq expression over the root whose string outputs
  each describe counts that do not add up (for JobSet: a replicated job whose buckets account
  for fewer Jobs than its replicas).

Rule: when either gives a message and the workload's phases are not terminal, suspended or
in a suspend transition (nor Undefined), Running and Initializing are replaced by Degraded:
the workload ran and lost part of itself (restarts may still bring it back), and every message
is listed on the view with the field ``status``. A terminal workload keeps its phase and
gets no message (a failed Job is expected under a Failed JobSet).

A third annotation, ``workload-map.run.ai/unknown-when``, gives the reasons a workload whose
structure lives in another object cannot be read (TrainJob: its runtime is missing, in
another namespace or malformed): each is listed on the view (field ``status``) and the phase
is ``Undefined`` (this server's Unknown), whatever the status mappings say.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from workload_map.definitions.extensions import (
    DEGRADED_WHEN_ANNOTATION,
    FAILING_CHILDREN_ANNOTATION,
    UNKNOWN_WHEN_ANNOTATION,
    annotation,
)
from workload_map.definitions.model import Definition
from workload_map.definitions.phases import ENTRIES_ORDER, Phase
from workload_map.errors import JqError
from workload_map.jq import Document, compile_program
from workload_map.owners import owner_chain, uid_of
from workload_map.resolution.view import ResolutionError

#: Phases that a failing child does not turn into Degraded (their own word is final).
_KEEP = frozenset({Phase.FAILED, Phase.COMPLETED, Phase.SUSPENDED, Phase.SUSPENDING, Phase.RESUMING,
                   Phase.UNDEFINED})
_FAILING = ("FailureTarget", "Failed")


def degraded_messages(definition: Definition, root: Mapping[str, Any], doc: Document,
                      objects: Sequence[Mapping[str, Any]], errors: list[ResolutionError]) -> list[str]:
    """The messages of both annotations (empty for a definition without them)."""
    return _failing_children(definition, root, objects) + _messages(definition, DEGRADED_WHEN_ANNOTATION, doc, errors)


def unknown_messages(definition: Definition, doc: Document, errors: list[ResolutionError]) -> list[str]:
    """The reasons ``unknown-when`` gives why the workload cannot be read (phase Undefined)."""
    return _messages(definition, UNKNOWN_WHEN_ANNOTATION, doc, errors)


def _messages(definition: Definition, key: str, doc: Document, errors: list[ResolutionError]) -> list[str]:
    """The string outputs of the jq expression of annotation ``key`` (a failure is an error)."""
    expression = annotation(definition, key)
    if not expression:
        return []
    try:
        outputs = compile_program(expression).all(doc)
    except JqError as exc:
        errors.append(ResolutionError(f"{key.rpartition('/')[2]} evaluation failed: {exc.reason}",
                                      definition.root.name, f'metadata.annotations["{key}"]', expression))
        return []
    return [o for o in outputs if isinstance(o, str) and o]


def _failing_children(definition: Definition, root: Mapping[str, Any],
                      objects: Sequence[Mapping[str, Any]]) -> list[str]:
    kinds = {tuple(reversed(k.strip().partition(".")[::2]))
             for k in (annotation(definition, FAILING_CHILDREN_ANNOTATION) or "").split(",") if k.strip()}
    if not kinds:
        return []
    root_uid, by_uid = uid_of(root), {uid_of(o): o for o in objects}
    by_uid[root_uid] = root
    out = []
    for obj in objects:
        group = str(obj.get("apiVersion", "")).rpartition("/")[0]
        if (group, obj.get("kind")) not in kinds or not _descends(obj, root_uid, by_uid):
            continue
        conditions = (obj.get("status") or {}).get("conditions") if isinstance(obj.get("status"), Mapping) else None
        for c in conditions if isinstance(conditions, list) else []:
            if isinstance(c, Mapping) and c.get("type") in _FAILING and c.get("status") == "True":
                name = (obj.get("metadata") or {}).get("name")
                out.append(f"{obj.get('kind')} {name} is failing ({c['type']}=True"
                           f"{', reason ' + str(c['reason']) if c.get('reason') else ''})")
                break
    return out


def _descends(obj: Mapping[str, Any], root_uid: str, by_uid: dict[str, Mapping[str, Any]]) -> bool:
    return root_uid in owner_chain(obj, by_uid.get).uids()


def apply_degraded(phases: list[Phase], messages: list[str], errors: list[ResolutionError]) -> list[Phase]:
    """``phases`` with Running/Initializing replaced by Degraded when ``messages`` say so."""
    if not messages or _KEEP.intersection(phases):
        return phases
    errors.extend(ResolutionError(m, field="status") for m in messages)
    kept = {p for p in phases if p not in (Phase.RUNNING, Phase.INITIALIZING)} | {Phase.DEGRADED}
    return [p for p in ENTRIES_ORDER if p in kept]
