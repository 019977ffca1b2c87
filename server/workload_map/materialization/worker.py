"""The resolver worker process: receives batches of jobs, resolves each, replies per job.

Runs in a child process started by ``workload_map.materialization.pool`` (``forkserver`` preloads this
module and the C jq binding, so a replacement worker starts in milliseconds with jq and the
resolver already imported; :func:`main` imports the binding before its first job otherwise, so
no job's budget pays for it: ``workload_map.jq.engine`` imports it on first use). The only importer of the resolver on the serving path: the server process
never runs jq for a request.

Protocol over one ``multiprocessing`` connection (pickled tuples):

* parent -> worker: ``(definitions, jobs)``; ``definitions`` maps a content key to a
  definition this worker has not been sent yet (each is sent once per worker and compiled
  on first use, the jq program cache lives here), ``jobs`` is a list of :class:`Job`;
* worker -> parent: one ``(uid, view, error, seconds)`` per job, in order. ``view`` is the
  resolved ``WorkloadView`` or None with ``error`` naming the exception (an object that
  breaks the resolver becomes an error view, never a dead worker).

Three job types share the workers, their budget and their kill and crash policy (issue 26
item 3, issue 25 item 5): :class:`Job` (a resolution), :class:`TrialJob` (the registration
trial of one jq expression: ``view`` is the slowest evaluation on the samples, seconds;
``workload_map.jq.trial``) and :class:`StudioJob` (the definition studio: ``view`` is the
answer dict of ``workload_map.resolution.studio.evaluate``).

Memory: a worker may grow by :data:`MEMORY_BUDGET_BYTES` of address space beyond its size
at start (``RLIMIT_AS``); an allocation beyond fails. In Python code that is a
``MemoryError``, answered like any failed resolution (an error view naming the budget),
after which the worker exits and is replaced; in the C jq library the process aborts and
the parent's crash path answers it (an error view too).

A worker that takes too long is killed by the parent; one killed by a signal (or a crash of
the C jq library) is noticed by the parent as end-of-file on its connection. On Linux the
worker asks the kernel to kill it when its parent (the fork server) dies
(``prctl(PR_SET_PDEATHSIG)``), so a SIGKILLed server leaves no busy worker behind.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from workload_map.definitions.model import Definition
from workload_map.jq import set_evaluation_tracer
from workload_map.jq.engine import c_jq
from workload_map.jq.trial import slowest_evaluation
from workload_map.resolution import DEFAULT_GPU_POLICY, GpuPolicy, resolve
from workload_map.resolution.nesting import Nested
from workload_map.resolution.studio import evaluate as studio_evaluate

if TYPE_CHECKING:  # ctypes, resource and signal are imported by a worker process's main(): the offline CLI
    from multiprocessing.connection import Connection  # runs jobs in process (run_job) and needs none of them

PR_SET_PDEATHSIG = 1
EXPRESSION_SLOT_BYTES = 512
"""Size of the shared buffer where a worker records the jq expression it is evaluating."""

MEMORY_BUDGET_BYTES = 1024 * 1024 * 1024
"""Address space a worker may add to its size at start (1 GiB; issue 29 item 6)."""

STARTED = "started"
"""Sent once by a worker when it is ready for jobs: a fresh worker first imports the parent's
``__main__`` module (forkserver and spawn do), which must not count against a job's budget."""

OVER_MEMORY = f"exceeded its memory budget of {MEMORY_BUDGET_BYTES // 2**20} MiB"
"""The end of the error of a job that ran out of memory (the worker then exits and is replaced)."""


def limit_memory(budget: int = MEMORY_BUDGET_BYTES) -> int:
    """Cap this process's address space at its current size plus ``budget`` bytes; the cap set.

    Linux reads the current size from ``/proc/self/statm``; elsewhere nothing is capped (0).
    """
    import resource

    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            size = int(statm.read().split()[0]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return 0
    cap = size + budget
    try:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    except (ValueError, OSError):
        return 0
    return cap


class Inputs(Struct, frozen=True):
    """What one resolution reads besides the definition: the arguments of ``workload_map.resolution.resolve``.

    Built in one place, ``workload_map.materialization.workset.WorkloadSet.inputs``; pickled
    to the worker process. Objects are Kubernetes JSON objects as the cache holds them.

    Attributes:
        root: the workload object.
        objects: its controller-owned descendants other than pods.
        pods: its controller-owned pods.
        origin: where the definition comes from (``catalog``, ``registered``, ...).
        policy: the GPU resource names.
        claims: the ResourceClaims its pods name (DRA).
        claim_templates: the ResourceClaimTemplates of its namespace (DRA).
        nested: the definitions of nested workload kinds (``workload-map.run.ai/nested``), or None.
        uid_conflicts: the objects holding the root's uid when two or more distinct ones do
            (``Reader.uid_conflicts``); the view then reports the conflict.
        dependent_conflicts: ``(uid, holders)`` for each uid of a descendant that two or more
            distinct objects hold (``Reader.uid_conflicts``); the view reports each.
    """

    root: Mapping[str, Any]
    objects: Sequence[Mapping[str, Any]] = ()
    pods: Sequence[Mapping[str, Any]] = ()
    origin: str = "catalog"
    policy: GpuPolicy = DEFAULT_GPU_POLICY
    claims: Sequence[Mapping[str, Any]] = ()
    claim_templates: Sequence[Mapping[str, Any]] = ()
    nested: Nested | None = None
    uid_conflicts: Sequence[str] = ()
    dependent_conflicts: Sequence[tuple[str, Sequence[str]]] = ()

    def resolve(self, definition: Definition) -> Any:
        """``workload_map.resolution.resolve(definition, ...)`` over these inputs (the ``WorkloadView``)."""
        return resolve(definition, self.root, objects=self.objects, pods=self.pods, origin=self.origin,
                       policy=self.policy, claims=self.claims, claim_templates=self.claim_templates,
                       nested=self.nested, uid_conflicts=self.uid_conflicts,
                       dependent_conflicts=self.dependent_conflicts)


class Job(Struct, frozen=True):
    """One resolution job sent to a worker process.

    Attributes:
        uid: the workload's uid.
        definition: the content key of its definition (``pool.definition_key``).
        inputs: the inputs of the resolution.
    """

    uid: str
    definition: str
    inputs: Inputs


class TrialJob(Struct, frozen=True):
    """The registration trial of one jq expression (``workload_map.jq.trial``).

    Attributes:
        uid: a caller-chosen id, unique among the jobs in flight.
        expression: the jq source (compiled and statically checked already).
        samples: JSON values to evaluate it on.
    """

    uid: str
    expression: str
    samples: tuple[Any, ...]


class StudioJob(Struct, frozen=True):
    """One evaluation of the definition studio (``workload_map.resolution.studio.evaluate``).

    Attributes:
        uid: a caller-chosen id, unique among the jobs in flight.
        definition: the Karta, YAML or JSON text.
        objects: Kubernetes objects to evaluate it on.
        root: the name of the root object among several of the kind, or None.
    """

    uid: str
    definition: str
    objects: tuple[Mapping[str, Any], ...]
    root: str | None = None


AnyJob = Job | TrialJob | StudioJob
"""What a worker runs."""


def _die_with_parent() -> None:
    import ctypes
    import signal

    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the parent still kills workers at shutdown
        pass


def _run(definitions: Mapping[str, Definition], job: AnyJob) -> Any:
    if isinstance(job, TrialJob):
        return slowest_evaluation(job.expression, job.samples)
    if isinstance(job, StudioJob):
        return studio_evaluate(job.definition, job.objects, root_name=job.root)
    return job.inputs.resolve(definitions[job.definition])


def run_job(definitions: Mapping[str, Definition], job: AnyJob) -> tuple[str, Any, str | None, float]:
    """Run one job; returns ``(uid, view or None, error or None, seconds)``.

    ``view`` is the job's result (module docstring); ``error`` names a failure (the
    exception, or :data:`OVER_MEMORY`).
    """
    started = time.perf_counter()
    what = "resolution" if isinstance(job, Job) else "evaluation"
    try:
        return job.uid, _run(definitions, job), None, time.perf_counter() - started
    except MemoryError:
        return job.uid, None, f"{what} {OVER_MEMORY}", time.perf_counter() - started
    except Exception as exc:  # noqa: BLE001 - one malformed object must not end the worker
        return job.uid, None, f"{what} failed: {type(exc).__name__}: {exc}", time.perf_counter() - started


def _record_expressions(slot: Any) -> None:
    """Write every expression the C jq library evaluates into ``slot``.

    ``slot`` is a shared ``c_char`` array the parent reads when it ends this worker for
    exceeding its budget.
    """

    def record(expression: str) -> None:
        slot.value = expression.encode("utf-8", "replace")[: EXPRESSION_SLOT_BYTES - 1]

    set_evaluation_tracer(record)


def main(conn: Connection, slot: Any = None) -> None:
    """Serve batches on ``conn`` until the parent closes it.

    Args:
        conn: the pipe to the parent (protocol in the module docstring): batches of
            :data:`AnyJob`.
        slot: optional shared ``c_char`` array of ``EXPRESSION_SLOT_BYTES``: the jq
            expression being evaluated is recorded there (emptied before each job).
    """
    import signal

    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the server; it ends us
    # a forked worker inherits its parent's Python handlers (an embedding server's SIGTERM
    # handler would keep it alive): SIGTERM ends a worker, as multiprocessing's exit expects
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})  # blocked by the parent around the fork
    limit_memory()
    if slot is not None:
        _record_expressions(slot)
    c_jq()  # before the first job's budget starts (imported already when the fork server preloaded it)
    definitions: dict[str, Definition] = {}
    conn.send(STARTED)  # the parent's budget for our first batch starts now, not at the fork
    while True:
        try:
            new, jobs = conn.recv()
        except (EOFError, OSError):
            return
        definitions.update(new)
        for job in jobs:
            if slot is not None:
                slot.value = b""
            reply = run_job(definitions, job)
            conn.send(reply)
            if reply[2] is not None and reply[2].endswith(OVER_MEMORY):
                sys.exit(0)  # memory may be fragmented or half-freed: a fresh worker takes over
