"""What a resolver job gives back (:class:`Outcome`) and the content key of a definition.

Shared by the server's pool (``materialization.pool``, worker processes) and the offline
resolver (``materialization.inline``, in this process): kept apart from the pool so that a
one-shot command resolving in process never imports ``multiprocessing``.
"""

from __future__ import annotations

import pickle
from typing import TYPE_CHECKING, Any, Literal

from msgspec import Struct

from workload_map.digests import sha1

if TYPE_CHECKING:
    from workload_map.definitions.model import Definition

Status = Literal["ok", "failed", "timeout", "crashed"]
_KEYS: dict[int, tuple[Definition, str]] = {}


def definition_key(definition: Definition) -> str:
    """A content key of ``definition`` (sha1 of its pickle, 40 hex digits), memoized per object."""
    hit = _KEYS.get(id(definition))
    if hit is not None and hit[0] is definition:
        return hit[1]
    key = sha1(pickle.dumps(definition), usedforsecurity=False).hexdigest()
    _KEYS[id(definition)] = (definition, key)
    return key


class Outcome(Struct, frozen=True):
    """The result of one job: ``view`` (status ok) or ``error`` (failed/timeout/crashed).

    ``view`` is the job's result: a ``WorkloadView`` for a resolution, see
    ``workload_map.materialization.worker`` for the other job types.

    ``seconds`` is the time spent in the worker (ok/failed) or until the job was given up.
    """

    uid: str
    status: Status
    view: Any
    error: str | None
    seconds: float
