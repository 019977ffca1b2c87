"""The Karta admission webhooks: ``AdmissionReview`` ``admission.k8s.io/v1`` over HTTPS.

Routes of the webhook listener (``wmap serve --webhook-port``, TLS with
``--webhook-cert``/``--webhook-key``), a separate Starlette app sharing the main app's
``Runtime``:

* ``POST /validate-karta``: :func:`workload_map.service.admission.validate_karta`; a refusal is
  ``allowed: false`` with ``status.code`` 422 and the message kubectl prints after
  ``admission webhook "..." denied the request:``;
* ``POST /mutate-karta``: stamps the managed GVK labels (``patchType: JSONPatch``);
* ``GET /livez``: 200.

Request contract (https://kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/#request):
the body is an ``AdmissionReview`` whose ``request`` has ``uid``, ``operation``, ``object``
and ``oldObject``; the answer echoes ``uid``. A body that is not one is 400; while the
server is still starting (no registrar yet) the answer is 503, so the webhook's
``failurePolicy`` decides. The body is capped at :data:`MAX_REVIEW_BYTES`.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from workload_map.api.runtime import Runtime
from workload_map.gvk import KARTA_GVK
from workload_map.logs import logger
from workload_map.service.admission import Verdict, label_patch, validate_karta

log = logger(__name__)

MAX_REVIEW_BYTES = 3 * 1024 * 1024
"""Largest AdmissionReview accepted (a Karta is at most 1.5 MiB in etcd; old and new object)."""


async def _review(request: Request) -> dict[str, Any] | Response:
    body = await request.body()
    if len(body) > MAX_REVIEW_BYTES:
        return PlainTextResponse("AdmissionReview too large", status_code=413)
    try:
        review = json.loads(body)
    except ValueError:
        return PlainTextResponse("body is not JSON", status_code=400)
    req = review.get("request") if isinstance(review, dict) else None
    if not isinstance(req, dict) or not isinstance(req.get("uid"), str):
        return PlainTextResponse("body is not an AdmissionReview with request.uid", status_code=400)
    return req


def _answer(uid: str, verdict: Verdict) -> JSONResponse:
    response: dict[str, Any] = {"uid": uid, "allowed": verdict.allowed}
    if not verdict.allowed:
        response["status"] = {"code": 422, "reason": "Invalid", "message": verdict.message}
    if verdict.patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(json.dumps(verdict.patch).encode()).decode()
    return JSONResponse({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})


def _object(req: dict[str, Any], key: str) -> dict[str, Any] | None:
    value = req.get(key)
    return value if isinstance(value, dict) else None


def create_webhook_app(runtime: Runtime) -> Starlette:
    """The webhook app over ``runtime`` (the main app's, read at request time)."""

    async def validate(request: Request) -> Response:
        req = await _review(request)
        if isinstance(req, Response):
            return req
        if runtime.registrar is None:
            return PlainTextResponse("the server is starting", status_code=503)
        obj = _object(req, "object") or {}
        reader = runtime.reader
        kartas = list(reader.list(KARTA_GVK)) if reader is not None else []
        verdict = await validate_karta(runtime.registrar, str(req.get("operation") or ""), obj,
                                       _object(req, "oldObject"), kartas)
        if not verdict.allowed:
            log.info("refused %s of Karta %s: %s", req.get("operation"), (obj.get("metadata") or {}).get("name"),
                     verdict.message)
        return _answer(req["uid"], verdict)

    async def mutate(request: Request) -> Response:
        req = await _review(request)
        if isinstance(req, Response):
            return req
        obj = _object(req, "object") or {}
        patch = label_patch(obj) if req.get("operation") in ("CREATE", "UPDATE") else []
        return _answer(req["uid"], Verdict(True, patch=patch))

    async def livez(_: Request) -> Response:
        return PlainTextResponse("ok")

    return Starlette(routes=[Route("/validate-karta", validate, methods=["POST"]),
                             Route("/mutate-karta", mutate, methods=["POST"]),
                             Route("/livez", livez, methods=["GET"])])
