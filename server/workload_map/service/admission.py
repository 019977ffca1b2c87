"""Admission decisions for Karta objects (the logic behind the validating and mutating webhooks).

Validation (``CREATE`` and ``UPDATE``), in this order, the first refusal wins:

1. on update, the root component's group/version/kind must not change (upstream rule:
   "the root component GVK is immutable");
2. the full validation of registration: fields, jq static checks, the bounded trial
   evaluation on the resolver workers, the name rules (``Registrar.check``), every finding with
   its field path;
3. no other Karta may describe the same root GVK (the existing one is named; different
   versions of one group/kind are allowed). Checked against the Kartas the informer cache
   holds, so it is best effort under concurrent creates, as upstream;
4. the managed GVK labels, when present, must hold the root GVK's values.

Mutation stamps the managed labels (``karta.run.ai/{group,version,kind}`` and the older
``run.ai/karta-*`` spelling, as registration does) on create and update, restoring any that
were edited or removed: what the upstream operator's mutating webhook does on create; on
update the mutation runs before validation, so the labels stay intact instead of the update
being refused. Rules: docs/kartas.md and the Karta spec notes, section 5.4.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from msgspec import Struct, field

from workload_map.errors import Conflict, InvalidDefinition, InvalidRequest
from workload_map.gvk import GVK
from workload_map.kube.kartastatus import root_gvk
from workload_map.registration.registrar import GVK_LABELS, Registrar


class Verdict(Struct, frozen=True):
    """An admission answer: allowed or refused with ``message``; ``patch`` is RFC 6902 ops."""

    allowed: bool
    message: str = ""
    patch: list[dict[str, Any]] = field(default_factory=list)


def _describe(gvk: GVK) -> str:
    return f'group "{gvk.group}" version "{gvk.version}" kind "{gvk.kind}"'


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def managed_labels(gvk: GVK) -> dict[str, str]:
    """Label -> value of every managed label for the root ``gvk`` (both spellings)."""
    return {label: value for spellings, value in zip(GVK_LABELS, (gvk.group, gvk.version, gvk.kind))
            for label in spellings}


def label_patch(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """JSON Patch ops that make the managed labels of ``obj`` right ([] when they are, or no root GVK)."""
    root = root_gvk(obj)
    if root is None:
        return []
    labels = (obj.get("metadata") or {}).get("labels")
    wanted = managed_labels(root)
    if not isinstance(labels, Mapping):
        return [{"op": "add", "path": "/metadata/labels", "value": wanted}]
    return [{"op": "add", "path": "/metadata/labels/" + key.replace("~", "~0").replace("/", "~1"), "value": value}
            for key, value in wanted.items() if labels.get(key) != value]


def duplicate_of(obj: Mapping[str, Any], kartas: Iterable[Mapping[str, Any]]) -> str | None:
    """The name of another Karta with the same root GVK as ``obj``, or None."""
    root, name = root_gvk(obj), _name(obj)
    if root is None:
        return None
    for other in kartas:
        if _name(other) != name and root_gvk(other) == root:
            return _name(other)
    return None


async def validate_karta(registrar: Registrar, operation: str, obj: Mapping[str, Any],
                         old: Mapping[str, Any] | None, kartas: Iterable[Mapping[str, Any]]) -> Verdict:
    """The validating webhook's decision for one ``CREATE`` or ``UPDATE`` (anything else is allowed)."""
    if operation not in ("CREATE", "UPDATE"):
        return Verdict(True)
    root = root_gvk(obj)
    if operation == "UPDATE" and old is not None:
        before = root_gvk(old)
        if before is not None and root != before:
            now = _describe(root) if root is not None else "none"
            return Verdict(False, "spec.structureDefinition.rootComponent.kind: the root component GVK is immutable "
                                  f"and cannot be changed after creation (was {_describe(before)}, now {now})")
    conflict = ""
    try:
        await registrar.check(dict(obj))
    except InvalidDefinition as exc:
        lines = [str(p) for p in exc.problems]
        return Verdict(False, f'Karta "{_name(obj)}" is invalid: ' + "; ".join(lines))
    except (Conflict, InvalidRequest) as exc:
        conflict = str(exc)
    existing = duplicate_of(obj, kartas)
    if existing is not None and root is not None:
        return Verdict(False, f'a Karta for {_describe(root)} already exists ("{existing}"); '
                              "only one Karta per group/version/kind is allowed")
    if conflict:
        return Verdict(False, conflict)
    return _check_labels(obj, root)


def _check_labels(obj: Mapping[str, Any], root: GVK | None) -> Verdict:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    if root is None or not isinstance(labels, Mapping):
        return Verdict(True)
    for key, value in managed_labels(root).items():
        if key in labels and labels[key] != value:
            return Verdict(False, f'metadata.labels: label "{key}" is managed by workload-map-server and must equal '
                                  f'"{value}"; it cannot be edited')
    return Verdict(True)
