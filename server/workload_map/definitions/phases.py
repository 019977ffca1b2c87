"""The shared phase vocabulary and its two orders.

Karta's ``ResourceStatus`` has nine values (docs/definition-format.md section 4). Every status whose
matchers match is reported, in upstream's *Entries* order. One headline phase is chosen by
:data:`PRECEDENCE`, in which terminal states win: a workload that has failed is shown as
Failed even if some of its pods still run.
"""

from __future__ import annotations

from enum import Enum


class Phase(str, Enum):
    """A workload phase. The string value is the wire name."""

    INITIALIZING = "Initializing"
    RUNNING = "Running"
    COMPLETED = "Completed"
    FAILED = "Failed"
    DEGRADED = "Degraded"
    SUSPENDED = "Suspended"
    SUSPENDING = "Suspending"
    RESUMING = "Resuming"
    UNDEFINED = "Undefined"


#: statusMappings keys -> phase. ``pending``/``progressing`` are accepted aliases of
#: ``initializing`` (one published upstream variant used them).
MAPPING_KEYS: dict[str, Phase] = {
    "initializing": Phase.INITIALIZING,
    "running": Phase.RUNNING,
    "completed": Phase.COMPLETED,
    "failed": Phase.FAILED,
    "degraded": Phase.DEGRADED,
    "suspended": Phase.SUSPENDED,
    "suspending": Phase.SUSPENDING,
    "resuming": Phase.RESUMING,
    "pending": Phase.INITIALIZING,
    "progressing": Phase.INITIALIZING,
}

#: Upstream evaluation and report order ("Entries").
ENTRIES_ORDER: tuple[Phase, ...] = (
    Phase.RESUMING,
    Phase.SUSPENDING,
    Phase.SUSPENDED,
    Phase.RUNNING,
    Phase.FAILED,
    Phase.COMPLETED,
    Phase.INITIALIZING,
    Phase.DEGRADED,
)

#: Headline precedence, strongest first: terminal states win.
PRECEDENCE: tuple[Phase, ...] = (
    Phase.FAILED,
    Phase.COMPLETED,
    Phase.SUSPENDING,
    Phase.SUSPENDED,
    Phase.RESUMING,
    Phase.DEGRADED,
    Phase.RUNNING,
    Phase.INITIALIZING,
    Phase.UNDEFINED,
)

_RANK = {phase: rank for rank, phase in enumerate(PRECEDENCE)}


def primary_phase(phases: list[Phase] | tuple[Phase, ...]) -> Phase:
    """The headline phase of a list of matched phases (``Undefined`` for none)."""
    return min(phases, key=_RANK.__getitem__, default=Phase.UNDEFINED)
