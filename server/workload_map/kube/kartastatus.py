"""The status of a Karta object: conditions ``Validated``, ``CRDExists``, ``Ready``.

Shape written to ``status`` (through the ``status`` subresource, a JSON merge patch)::

    {"observedGeneration": 3,
     "conditions": [{"type": "Validated", "status": "True", "reason": "ValidationSucceeded",
                     "message": "...", "observedGeneration": 3, "lastTransitionTime": "..."}, ...],
     "workloads": 2,                      # top-level workloads this definition resolves now
     "lastResolvedTime": "2026-12-01T23:40:00Z"}   # when one of them was last resolved

Condition types, reasons and wording follow the upstream operator (docs/definition-format.md
and the Karta spec notes, section 5.4): ``Validated`` (ValidationSucceeded /
ValidationFailed with the validator's findings, newline separated), ``CRDExists``
(CRDFound / CRDNotFound: the API server serves the root kind in that version; built-in
kinds count), ``Ready`` (Ready / NotReady: both true). ``lastTransitionTime`` changes only
when a condition's status changes (Kubernetes API conventions).

:func:`write_status` sends the patch; the decision whether to write is
:func:`needs_write`, so an unchanged status is never written again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from msgspec import Struct

from workload_map.gvk import GVK, KARTA_GVK
from workload_map.kube.rest import MERGE_PATCH, send_json

VALIDATED, CRD_EXISTS, READY = "Validated", "CRDExists", "Ready"
MAX_MESSAGE = 32768
"""``maxLength`` of a condition message in the CRD schema."""

KARTAS_PATH = f"/apis/{KARTA_GVK.group}/{KARTA_GVK.version}/kartas"


def now_rfc3339() -> str:
    """The current time as RFC 3339 seconds, UTC (``2026-12-01T23:40:00Z``)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class KartaFindings(Struct, frozen=True):
    """What the server found about one Karta.

    Attributes:
        generation: ``metadata.generation`` the findings are about.
        problems: validation findings (empty: valid).
        root: the root GVK, when the document names one.
        crd_found: the API server serves ``root`` (None: unknown, e.g. discovery failed).
        workloads: top-level workloads the definition resolves now (0 when not in force).
        last_resolved: RFC 3339 time one of them was last resolved (None: never).
    """

    generation: int
    problems: tuple[str, ...]
    root: GVK | None
    crd_found: bool | None
    workloads: int = 0
    last_resolved: str | None = None


def _condition(kind: str, ok: bool | None, reason: str, message: str, generation: int) -> dict[str, Any]:
    status = "Unknown" if ok is None else ("True" if ok else "False")
    return {"type": kind, "status": status, "reason": reason, "message": message[:MAX_MESSAGE],
            "observedGeneration": generation}


def conditions(findings: KartaFindings) -> list[dict[str, Any]]:
    """The three conditions (without ``lastTransitionTime``) for ``findings``."""
    gen, root = findings.generation, findings.root
    valid = not findings.problems
    validated = _condition(VALIDATED, valid, "ValidationSucceeded" if valid else "ValidationFailed",
                           "the Karta is a valid definition" if valid
                           else "\n".join(findings.problems) or "Karta validation failed", gen)
    if root is None:
        crd = _condition(CRD_EXISTS, False, "CRDNotFound", "the Karta names no root kind", gen)
    elif findings.crd_found is None:
        crd = _condition(CRD_EXISTS, None, "DiscoveryFailed", f"cannot ask the API server whether it serves {root}",
                         gen)
    elif findings.crd_found:
        crd = _condition(CRD_EXISTS, True, "CRDFound",
                         f"{root.kind}.{root.group or 'core'} {root.version} is served by the API server", gen)
    else:
        crd = _condition(CRD_EXISTS, False, "CRDNotFound", f"CRD for {root.group or 'core'}/{root.kind} not found "
                                                           f"or does not serve version {root.version}", gen)
    ready = valid and findings.crd_found is True and root is not None
    return [validated, crd, _condition(READY, ready, "Ready" if ready else "NotReady",
                                       "Validated and CRDExists are both True" if ready
                                       else "Validated and CRDExists must both be True", gen)]


def desired_status(findings: KartaFindings, current: Mapping[str, Any] | None, now: str) -> dict[str, Any]:
    """The full status to hold, keeping ``lastTransitionTime`` of conditions whose status is unchanged.

    Args:
        findings: what the server found.
        current: the object's ``status`` now (may be None or hold an upstream operator's fields).
        now: RFC 3339 time for changed conditions.
    """
    previous = {c.get("type"): c for c in (current or {}).get("conditions") or [] if isinstance(c, Mapping)}
    out = []
    for condition in conditions(findings):
        before = previous.get(condition["type"])
        same = before is not None and before.get("status") == condition["status"]
        out.append({**condition, "lastTransitionTime": str(before.get("lastTransitionTime") or now)
                    if same and before is not None else now})
    status: dict[str, Any] = {"observedGeneration": findings.generation, "conditions": out,
                              "workloads": findings.workloads}
    if findings.last_resolved is not None:
        status["lastResolvedTime"] = findings.last_resolved
    return status


def needs_write(current: Mapping[str, Any] | None, desired: Mapping[str, Any], *, refresh_s: float,
                now: datetime | None = None) -> bool:
    """True when the status must be written.

    That is: ``desired`` differs from ``current`` in anything but ``lastResolvedTime``, or
    ``lastResolvedTime`` moved and the written one is more than ``refresh_s`` seconds old. So resolutions, which happen on every pod change, write at most once per ``refresh_s``.
    """
    current = current or {}
    keys = ("observedGeneration", "conditions", "workloads")
    if any(current.get(k) != desired.get(k) for k in keys):
        return True
    written, wanted = current.get("lastResolvedTime"), desired.get("lastResolvedTime")
    if written == wanted:
        return False
    if written is None:
        return True
    age = (now or datetime.now(UTC)) - _parse_time(str(written))
    return age.total_seconds() >= refresh_s


def _parse_time(text: str) -> datetime:
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return datetime.fromtimestamp(0, UTC)


def root_gvk(doc: Mapping[str, Any]) -> GVK | None:
    """The root GVK named by a Karta document (valid or not), or None when incomplete."""
    spec = doc.get("spec") if isinstance(doc.get("spec"), Mapping) else {}
    structure = spec.get("structureDefinition") if isinstance(spec, Mapping) else None
    root = structure.get("rootComponent") if isinstance(structure, Mapping) else None
    kind = root.get("kind") if isinstance(root, Mapping) else None
    if not isinstance(kind, Mapping) or not kind.get("version") or not kind.get("kind"):
        return None
    return GVK(str(kind.get("group") or ""), str(kind["version"]), str(kind["kind"]))


def problem_lines(problems: Sequence[Any]) -> tuple[str, ...]:
    """Validator findings as message lines (``str(Problem)``: ``path: message``)."""
    return tuple(str(p) for p in problems)


async def write_status(client: Any, name: str, status: Mapping[str, Any]) -> int:
    """Merge-patch ``status`` into the Karta ``name`` through its status subresource.

    Returns:
        The HTTP status (200 written; 404 the Karta is gone; 0 network failure; others as
        the API server answered). Nothing is raised.
    """
    code, _ = await send_json(client, "PATCH", f"{KARTAS_PATH}/{name}/status", {"status": dict(status)},
                              content_type=MERGE_PATCH)
    return code
