"""The permission rules for definition and workload writes, and writing as the caller.

Registering a definition needs ``create`` on ``kartas.run.ai`` (cluster-scoped), removing
one needs ``delete`` (SubjectAccessReview; a dry run counts as a registration, as a
``dryRun`` create does in Kubernetes). Inside :func:`writing_as` every request of an
``ImpersonatingClient`` (the Karta store's client when impersonation is on) carries the
caller's identity, so the API server enforces the caller's own RBAC again (``get``,
``create``, ``update``, ``delete`` on kartas) and its audit log names the caller. A write
the API server refuses for the caller becomes ``Forbidden`` (403) instead of the store's
generic 503. Workload writes (pod templates, suspend, resume: :func:`patching_as`) need
``patch`` on the workload's resource in its namespace and run as the caller the same way.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from workload_map.auth.access import Guard
from workload_map.errors import Forbidden
from workload_map.kube.errors import WriteRefused
from workload_map.kube.reviews import acting_as
from workload_map.definitions.stored import StoreError
from workload_map.gvk import KARTA_GVK

KARTA_RESOURCE = "kartas"


@contextlib.asynccontextmanager
async def _as_caller(guard: Guard, refusal: type[Exception], message: str) -> AsyncIterator[None]:
    """Run the block acting as the caller (no-op for an open guard).

    The one impersonation path of both write kinds: a ``refusal`` raised while the API
    server refused the caller (not the server's own identity) becomes ``Forbidden(message)``.
    """
    if guard.is_open:
        yield
        return
    with acting_as(guard.caller.name, guard.caller.groups) as acting:
        try:
            yield
        except refusal:
            if acting.refused == "caller":
                raise Forbidden(message) from None
            raise


@contextlib.asynccontextmanager
async def writing_as(guard: Guard, verb: str) -> AsyncIterator[None]:
    """Require ``verb`` on ``kartas.run.ai``, then run the block acting as the caller.

    Raises:
        Forbidden: the caller may not ``verb`` kartas (checked before the block runs, or
            refused by the API server during an impersonated write).
        ReviewUnavailable: the permission could not be checked.
    """
    await guard.require(verb, KARTA_GVK.group, KARTA_RESOURCE)
    message = f"user {guard.caller.name!r} may not write {KARTA_RESOURCE}.{KARTA_GVK.group} (refused by the API server)"
    async with _as_caller(guard, StoreError, message):
        yield


@contextlib.asynccontextmanager
async def patching_as(guard: Guard, namespace: str, group: str, resource: str) -> AsyncIterator[None]:
    """Require ``patch`` on ``resource.group`` in ``namespace``, then run the block acting as the caller.

    The same mechanism as :func:`writing_as` (one impersonation path): the workload writer's
    client is the Karta store's ``ImpersonatingClient``, so its GET and PATCH carry the
    caller's identity and the API server applies the caller's RBAC again.

    Raises:
        Forbidden: the caller may not patch (checked before the block, or refused by the API
            server during the impersonated write).
        ReviewUnavailable: the permission could not be checked.
    """
    await guard.require("patch", group, resource, namespace)
    target = f"{resource}.{group}" if group else resource
    message = f"user {guard.caller.name!r} may not patch {target} in namespace {namespace} (refused by the API server)"
    async with _as_caller(guard, WriteRefused, message):
        yield
