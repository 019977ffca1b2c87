"""Health endpoints in the Kubernetes style: ``/livez``, ``/readyz`` (``?verbose``), ``/healthz``.

``/livez`` only proves the event loop answers (no dependency checks, so no restart
storms). ``/readyz`` is 503 until start-up finished, every watched informer has listed
once and every workload found then has a materialized view ("resolved N of M" in the
verbose output); informers whose CRD is missing or that are forbidden do not block but are
reported.
With ``?verbose`` one ``[+]``/``[-]`` line per check is listed, as kube-apiserver does.
``/healthz`` is the deprecated alias of ``/readyz``.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import PlainTextResponse

from server.api.runtime import Runtime, runtime_of
from server.kube.reader import InformerStatus


async def livez(request: Request) -> PlainTextResponse:
    """Liveness: the process answers.

    ---
    summary: Liveness
    responses:
      '200': {description: ok, content: {text/plain: {schema: {type: string}}}}
    """
    return PlainTextResponse("ok")


def _informer_line(status: InformerStatus) -> str:
    gvk = status.gvk
    name = f"informer {gvk.group or 'core'}/{gvk.version}/{gvk.kind}"
    if status.state in ("crd_missing", "forbidden"):
        hint = "CRD not installed" if status.state == "crd_missing" else "not allowed to list/watch"
        return f"[+]{name} {status.state} ({hint}; not blocking)"
    sign = "+" if status.is_settled else "-"
    error = f": {status.last_error}" if status.last_error and not status.is_settled else ""
    return f"[{sign}]{name} {status.state} objects={status.count}{error}"


def checks(runtime: Runtime) -> list[str]:
    """The verbose check lines."""
    lines = [f"[{'+' if runtime.started else '-'}]startup {'ok' if runtime.started else 'in progress'}"]
    lines += [_informer_line(s) for s in runtime.states().values()]
    service = runtime.service
    if service is not None:
        resolved, known = service.progress()
        sign = "+" if service.is_ready() else "-"
        lines.append(f"[{sign}]views resolved {resolved} of {known}")
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
