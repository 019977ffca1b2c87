"""The Mutation root: register, register from the catalog, unregister; act on workloads.

Expected failures are data, not errors: every result lists validation problems by field
path, and a failed registration leaves the previous definition in force. Permission
failures are errors (``extensions.code`` ``FORBIDDEN``, or ``UNAVAILABLE`` with
``extensions.error`` ``auth_unavailable`` when the check could not be made): registering (dry runs included) needs ``create`` and
unregistering ``delete`` on ``kartas.run.ai``; the write runs as the caller
(``workload_map.auth.writes``). Workload actions (``updatePodTemplate``, ``suspendWorkload``,
``resumeWorkload``: ``workload_map.graphql.actions``) need ``patch`` on the workload's resource.
"""

from __future__ import annotations

from typing import Any

import strawberry
from strawberry.types import Info

from workload_map.graphql.actions import WorkloadActionResult, act
from workload_map.graphql.context import Context
from workload_map.graphql.definitions import Definition, Problem, RegistrationResult
from workload_map.auth.access import ReviewUnavailable
from workload_map.auth.writes import writing_as
from workload_map.errors import Forbidden, InvalidDefinition, ServerError
from workload_map.errors import Problem as ProblemValue
from workload_map.registration.registrar import Registration, register_document

AUTH_ERRORS = (Forbidden, ReviewUnavailable)


def _failed(exc: ServerError, dry_run: bool) -> RegistrationResult:
    problems = exc.problems if isinstance(exc, InvalidDefinition) else [ProblemValue("", str(exc))]
    return RegistrationResult(ok=False, dry_run=dry_run, created=False, definition=None,
                              problems=[Problem.of(p) for p in problems])


def _succeeded(ctx: Context, outcome: Registration, cluster: str | None) -> RegistrationResult:
    entry = ctx.registrar_for(cluster).entry_of(outcome)
    return RegistrationResult(ok=True, dry_run=outcome.dry_run, created=outcome.created,
                              definition=Definition(entry=entry), problems=[])


async def _register(ctx: Context, doc: Any, dry_run: bool, cluster: str | None) -> RegistrationResult:
    try:
        async with writing_as(ctx.guard, "create"):
            outcome = await register_document(ctx.registrar_for(cluster), doc, dry_run=dry_run)
    except AUTH_ERRORS:
        raise  # an error, not data: the schema's error hook gives it its code
    except ServerError as exc:
        return _failed(exc, dry_run)
    return _succeeded(ctx, outcome, cluster)


@strawberry.type
class Mutation:
    """Definition registration and workload actions."""

    @strawberry.mutation(description="Register a Karta definition (YAML or JSON text). With dryRun only "
                                     "validate it. Replaces a registered definition of the same name. cluster: "
                                     "whose Karta objects (default: the first cluster).")
    async def register_definition(self, info: Info[Context, None], definition: str,
                                  dry_run: bool | None = False, cluster: str | None = None) -> RegistrationResult:
        """Register (or validate) a definition."""
        return await _register(info.context, definition, bool(dry_run), cluster)

    @strawberry.mutation(description="Register the built-in catalog definition for a type (alias such as "
                                     "\"jobset\", slug, kind or kind.group) as a stored definition.")
    async def register_catalog_type(self, info: Info[Context, None], name: str,
                                    cluster: str | None = None) -> RegistrationResult:
        """Register a catalog type."""
        try:
            entry = info.context.registry.catalog.find(name)
        except ServerError as exc:
            return _failed(exc, False)
        return await _register(info.context, entry.definition.manifest, False, cluster)

    @strawberry.mutation(description="Remove a registered definition by name (built-in catalog entries cannot "
                                     "be removed; the catalog entry applies again).")
    async def unregister_definition(self, info: Info[Context, None], name: str,
                                    cluster: str | None = None) -> RegistrationResult:
        """Unregister a definition."""
        try:
            async with writing_as(info.context.guard, "delete"):
                entry = await info.context.registrar_for(cluster).unregister(name)
        except AUTH_ERRORS:
            raise
        except ServerError as exc:
            return _failed(exc, False)
        return RegistrationResult(ok=True, dry_run=False, created=False, definition=Definition(entry=entry),
                                  problems=[])

    @strawberry.mutation(description="Apply a pod change (labels, annotations, nodeSelector, tolerations, "
                                     "priorityClassName, schedulerName, containers[].env/resources; components and "
                                     "instances narrow it) to every pod template the definition locates, as one "
                                     "patch with a resourceVersion precondition. change is the JSON text of the "
                                     "REST body. dryRun returns the patch only.")
    async def update_pod_template(self, info: Info[Context, None], namespace: str, group: str, kind: str, name: str,
                                  change: str, resource_version: str | None = None,
                                  dry_run: bool | None = False, cluster: str | None = None) -> WorkloadActionResult:
        """Change pod templates through the definition."""
        return await act(info.context, (namespace, group, kind, name), change=change,
                         resource_version=resource_version, dry_run=bool(dry_run), cluster=cluster)

    @strawberry.mutation(description="Suspend a workload with its definition's suspendActions.")
    async def suspend_workload(self, info: Info[Context, None], namespace: str, group: str, kind: str, name: str,
                               resource_version: str | None = None, dry_run: bool | None = False,
                               cluster: str | None = None) -> WorkloadActionResult:
        """Suspend."""
        return await act(info.context, (namespace, group, kind, name), suspend=True,
                         resource_version=resource_version, dry_run=bool(dry_run), cluster=cluster)

    @strawberry.mutation(description="Resume a workload with its definition's resumeActions.")
    async def resume_workload(self, info: Info[Context, None], namespace: str, group: str, kind: str, name: str,
                              resource_version: str | None = None, dry_run: bool | None = False,
                              cluster: str | None = None) -> WorkloadActionResult:
        """Resume."""
        return await act(info.context, (namespace, group, kind, name), suspend=False,
                         resource_version=resource_version, dry_run=bool(dry_run), cluster=cluster)
