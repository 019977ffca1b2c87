"""Status evaluation of the root object: phases from status mappings.

Semantics (docs/definition-format.md section 7, reproduced exactly):

1. ``phase`` = first output of ``phaseDefinition.path`` (unset when absent or no output);
2. ``conditions`` = all outputs of ``conditionsDefinition.path``, flattened one level (an
   array output contributes its elements); the configured type/status/message/reason
   keys are read (string values only) into a map by type, a later duplicate winning;
3. a phase matches when **any** of its matchers matches; a matcher matches when every
   set criterion holds: ``byPhase`` equals the phase; each ``byConditions`` entry's type
   exists and its status/reason equal when given; ``byExpression`` -- the first output of
   ``(<expression>) | tostring`` equals ``expectedResult``; no criterion = match;
4. the result is every matched phase in upstream's Entries order, ``[Undefined]`` when
   none; a jq error anywhere aborts the evaluation (the caller records it).

Our additions (issue 28; ``workload_map.resolution.freshness`` has the rules and sources):
the status paths see ``.status.conditions`` ordered by ``lastTransitionTime`` and without
the conditions whose ``observedGeneration`` is behind ``metadata.generation``; such stale
conditions are listed in the view (``stale: "true"``) but decide nothing; and a status that
cannot be interpreted (``status`` or ``conditions`` of the wrong type, a non-string phase)
yields ``[Undefined]`` with the problem reported by the caller.
"""

from __future__ import annotations

from typing import Any

from msgspec import Struct, field

from workload_map.definitions.model import StatusDefinition, StatusMatcher
from workload_map.definitions.phases import ENTRIES_ORDER, Phase
from workload_map.jq import Document, compile_program


class StatusResult(Struct):
    """Matched phases (Entries order), the raw phase and the extracted conditions."""

    phases: list[Phase]
    raw_phase: str | None = None
    conditions: dict[str, dict[str, str]] = field(default_factory=dict)
    stale: list[dict[str, str]] = field(default_factory=list)

    def listed(self) -> list[dict[str, str]]:
        """The conditions the view lists: the deciding ones, then the stale ones."""
        return list(self.conditions.values()) + self.stale


def status_expressions(status: StatusDefinition | None) -> list[str]:
    """The jq programs :func:`evaluate_status` may run on the root, as it spells them."""
    if status is None:
        return []
    out = [status.phase_path] if status.phase_path else []
    if status.conditions is not None and status.conditions.path:
        out.append(status.conditions.path)
    out += [f"({m.by_expression}) | tostring" for _, matchers in status.mappings for m in matchers if m.by_expression]
    return out


def evaluate_status(status: StatusDefinition, doc: Document) -> StatusResult:
    """Evaluate ``status`` against the root object.

    Raises:
        JqEvaluationError: any jq failure (the whole evaluation is aborted, as upstream).
    """
    raw_phase = None
    if status.phase_path:
        value = compile_program(status.phase_path).first(doc)
        if value is not None and not isinstance(value, str):
            raise StatusShapeError(f"the phase path gave a {type(value).__name__} ({value!r}), not a string",
                                   "phaseDefinition.path")
        raw_phase = value
    conditions = _conditions(status, doc)
    by_phase = dict(status.mappings)
    matched = [p for p in ENTRIES_ORDER if p in by_phase
               and any(_matches(m, raw_phase, conditions, doc) for m in by_phase[p])]
    return StatusResult(matched or [Phase.UNDEFINED], raw_phase, conditions)


class StatusShapeError(ValueError):
    """The status cannot be interpreted; ``field`` names where (the phase becomes Undefined)."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


def _conditions(status: StatusDefinition, doc: Document) -> dict[str, dict[str, str]]:
    conditions: dict[str, dict[str, str]] = {}
    if status.conditions is None or not status.conditions.path:
        return conditions
    cd = status.conditions
    for output in compile_program(cd.path).all(doc):
        for item in output if isinstance(output, list) else [output]:
            if not isinstance(item, dict) or not isinstance(item.get(cd.type_field), str):
                continue
            entry = {"type": item[cd.type_field]}
            for key, name in (("status", cd.status_field), ("reason", cd.reason_field),
                              ("message", cd.message_field)):
                if isinstance(item.get(name), str):
                    entry[key] = item[name]
            conditions[entry["type"]] = entry
    return conditions


def _matches(m: StatusMatcher, raw_phase: str | None, conditions: dict[str, dict[str, str]], doc: Document) -> bool:
    if m.by_phase and raw_phase != m.by_phase:
        return False
    for want in m.by_conditions:
        have = conditions.get(want.type)
        if have is None:
            return False
        if want.status and have.get("status") != want.status:
            return False
        if want.reason and have.get("reason") != want.reason:
            return False
    if m.by_expression:
        outputs = compile_program(f"({m.by_expression}) | tostring").first(doc, default=_NONE)
        if outputs is _NONE or outputs != m.expected_result:
            return False
    return True


_NONE: Any = object()
