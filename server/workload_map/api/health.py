"""Health endpoints in the Kubernetes style: ``/livez``, ``/readyz`` (``?verbose``), ``/healthz``.

``/livez`` only proves the event loop answers (no dependency checks, so no restart
storms). ``/readyz`` is 503 until start-up finished, every watched informer has listed
once and every workload found then has a materialized view ("resolved N of M" in the
verbose output); informers whose CRD is missing or that are forbidden do not block but are
reported.
With ``?verbose`` one ``[+]``/``[-]`` line per check is listed, as kube-apiserver does,
each failing informer with its error text, and a ``freshness`` line (see
``workload_map.kube.freshness``). Stale data does **not** make ``/readyz`` 503: every replica reads
the same API server, so an outage would take all of them out of their Service at once and
turn answers flagged stale into connection errors (the reasoning is in docs/clusters.md, "Staleness and recovery").
With several clusters each has a ``cluster NAME`` line and its informer lines are prefixed
with its name; ``/readyz`` is 200 once every cluster has synced once and every view is
resolved (a cluster unreachable from the start keeps it 503; one lost later is stale,
flagged, not unready: see docs/clusters.md, "Several clusters").
``/healthz`` is the deprecated alias of ``/readyz``.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import PlainTextResponse

from workload_map.api.runtime import Runtime, runtime_of
from workload_map.kube.freshness import freshness, kind_name
from workload_map.kube.reader import InformerStatus, iso_time


async def livez(request: Request) -> PlainTextResponse:
    """Liveness: the process answers.

    ---
    summary: Liveness
    responses:
      '200': {description: ok, content: {text/plain: {schema: {type: string}}}}
    """
    return PlainTextResponse("ok")


def _informer_line(status: InformerStatus) -> str:
    name = f"informer {kind_name(status.gvk)}"
    if status.state in ("crd_missing", "forbidden"):
        hint = "CRD not installed" if status.state == "crd_missing" else "not allowed to list/watch"
        return f"[+]{name} {status.state} ({hint}; not blocking)"
    sign = "+" if status.is_settled else "-"
    failing = not status.is_settled or status.state == "error" or status.stale
    error = f": {status.last_error}" if status.last_error and failing else ""
    stale = f" stale since {iso_time(status.down_since)}" if status.stale else ""
    return f"[{sign}]{name} {status.state} objects={status.count}{stale}{error}"


def freshness_line(runtime: Runtime) -> str:
    """The ``freshness`` check line: ``fresh``, or ``stale since T (kinds): error``.

    Never blocking: stale data is served, flagged.
    """
    summary = runtime.freshness()
    if not summary.stale:
        return "[+]freshness ok"
    kinds = ", ".join(summary.stale_kinds)
    return f"[+]freshness stale since {summary.since_iso} ({kinds}; served flagged): {summary.error}"


def cluster_lines(runtime: Runtime) -> list[str]:
    """With several clusters: per cluster a ``cluster NAME`` line, then its informer lines.

    ``[+]cluster a synced``, ``[-]cluster b syncing`` (blocks readiness until its first
    sync), ``[+]cluster b stale since T: error`` (served flagged, not blocking).
    """
    lines: list[str] = []
    for name, states in runtime.cluster_states().items():
        summary = freshness(states)
        if summary.stale:
            lines.append(f"[+]cluster {name} stale since {summary.since_iso} (served flagged): {summary.error}")
        elif summary.synced:
            lines.append(f"[+]cluster {name} synced")
        else:
            lines.append(f"[-]cluster {name} syncing" + (f": {summary.error}" if summary.error else ""))
        lines += [f"{line[:3]}{name}/{line[3:]}" for line in map(_informer_line, states.values())]
    return lines


def checks(runtime: Runtime) -> list[str]:
    """The verbose check lines."""
    state = "ok" if runtime.started else (f"failed: {runtime.startup_error}" if runtime.startup_error else "in progress")
    lines = [f"[{'+' if runtime.started else '-'}]startup {state}"]
    if runtime.karta_crds:
        lines += cluster_lines(runtime)
    else:
        lines += [_informer_line(s) for s in runtime.states().values()]
    service = runtime.service
    if service is not None:
        resolved, known = service.progress()
        sign = "+" if service.is_ready() else "-"
        lines.append(f"[{sign}]views resolved {resolved} of {known}")
    lines.append(freshness_line(runtime))
    if runtime.karta_crd:
        ok = runtime.karta_crd in ("present", "installed")
        note = "" if ok else " (definitions cannot be registered; start with --install-karta-crd)"
        lines.append(f"[+]karta-crd {runtime.karta_crd}{note}")
    if runtime.registrar is not None and runtime.registrar.skipped:
        lines.append(f"[+]definitions {len(runtime.registrar.skipped)} invalid stored definition(s) skipped")
    return lines


async def readyz(request: Request) -> PlainTextResponse:
    """Readiness: 503 until start-up finished and the informer caches synced.

    ---
    summary: Readiness
    parameters:
      - {name: verbose, in: query, schema: {type: boolean}, description: list every check}
    responses:
      '200': {description: ready, content: {text/plain: {schema: {type: string}}}}
      '503': {description: not ready, content: {text/plain: {schema: {type: string}}}}
    """
    runtime = runtime_of(request)
    ready = runtime.is_ready()
    status = 200 if ready else 503
    if "verbose" not in request.query_params:
        return PlainTextResponse("ok" if ready else "not ready", status_code=status)
    text = "\n".join([*checks(runtime), f"readyz check {'passed' if ready else 'failed'}"]) + "\n"
    return PlainTextResponse(text, status_code=status)


async def healthz(request: Request) -> PlainTextResponse:
    """Deprecated alias of ``/readyz``.

    ---
    summary: Health (alias of /readyz)
    responses:
      '200': {description: ready}
      '503': {description: not ready}
    """
    return await readyz(request)
