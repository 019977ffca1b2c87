"""GraphQL side of workload actions: the result type and the shared resolver body.

The mutations (``updatePodTemplate``, ``suspendWorkload``, ``resumeWorkload`` in
``workload_map.graphql.mutation``) call ``workload_map.service.actions`` exactly as REST does. Failures are
the domain errors, raised as they are: the schema's error hook gives each its GraphQL
``extensions.code`` (``FORBIDDEN``, ``CONFLICT``, ``BAD_USER_INPUT``, ``NOT_FOUND``, ...) and
keeps the domain code (``forbidden``, ``not_writable``, ...) as ``extensions.error``.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import strawberry
from strawberry.scalars import JSON

from workload_map.graphql.context import Context
from workload_map.auth.scope import workload_scope
from workload_map.auth.writes import patching_as
from workload_map.definitions.load import DuplicateKey, unique_pairs
from workload_map.errors import CacheNotReady, InvalidRequest
from workload_map.service.actions import set_suspended, update_pod_templates
from workload_map.service.fleet import route_write


@strawberry.type(description="The outcome of a write through a definition.")
class WorkloadActionResult:
    """Adapter over the service's answer dict."""

    applied_to: str = strawberry.field(description="cluster, or snapshot (the in-memory objects were changed).")
    dry_run: bool
    changed: bool = strawberry.field(description="False when the workload already had the change (nothing sent).")
    resource_version: str = strawberry.field(description="resourceVersion after the write (before it on a dry run).")
    patch: JSON = strawberry.field(description="The RFC 6902 JSON Patch (resourceVersion precondition first).")
    targets: JSON = strawberry.field(description="Per component and instance, the JSON Pointers written.")


def _result(answer: dict[str, Any]) -> WorkloadActionResult:
    return WorkloadActionResult(applied_to=answer["appliedTo"], dry_run=answer["dryRun"], changed=answer["changed"],
                                resource_version=answer["resourceVersion"], patch=answer["patch"],
                                targets=answer["targets"])


def _change(text: Any) -> dict[str, Any]:
    """The ``change`` argument (JSON text of the REST body) as an object.

    Raises:
        InvalidRequest: not JSON, or not an object.
    """
    try:
        value = json.loads(text, object_pairs_hook=unique_pairs) if isinstance(text, str) else text
    except (ValueError, DuplicateKey) as exc:
        raise InvalidRequest(f"change is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise InvalidRequest("change must be the JSON text of an object")
    return dict(value)


async def act(ctx: Context, identity: tuple[str, str, str, str], *, change: Any = None, suspend: bool | None = None,
              resource_version: str | None = None, dry_run: bool = False,
              cluster: str | None = None) -> WorkloadActionResult:
    """Run one action in the workload's cluster.

    Raises:
        ServerError: the domain error (``Forbidden``, ``Conflict``, ``WorkloadNotFound``,
            ``InvalidRequest``, ``CacheNotReady``, ...); the schema's error hook gives it its
            GraphQL code (:mod:`workload_map.graphql.errors`).
    """
    namespace, group, kind, name = identity
    group = "" if group == "core" else group
    ctx.require_ready()
    allow = await workload_scope(ctx.guard, ctx.service, namespace, group, kind)
    kwargs: dict[str, Any] = {"dry_run": dry_run, "allow": allow, "scope": partial(patching_as, ctx.guard, namespace)}
    target = (namespace, group, kind, name)
    service, writer = route_write(ctx.service, ctx.writer, target, cluster)
    if writer is None:
        raise CacheNotReady("workload writes are not available yet; retry shortly")
    if suspend is None:
        body = _change(change)
        if resource_version:
            body["resourceVersion"] = resource_version
        return _result(await update_pod_templates(service, writer, target, body, **kwargs))
    return _result(await set_suspended(service, writer, target, suspend,
                                       resource_version=resource_version, **kwargs))
