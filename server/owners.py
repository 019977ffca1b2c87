"""Owner references: the one rule for "who controls this object", shared by every layer.

Kubernetes marks the managing owner with ``controller: true`` (API conventions,
"ownerReferences"; controllers and kubectl follow it). Only that reference is followed: an
object merely owned by another (for garbage collection, without ``controller``) is not
part of its workload, as upstream ``kli`` decides. Chains are followed at most
:data:`MAX_OWNER_DEPTH` hops (``kli`` uses 6).
"""

from __future__ import annotations

from typing import Any, Mapping

MAX_OWNER_DEPTH = 6


def controller_uid(obj: Mapping[str, Any]) -> str | None:
    """UID of the ownerReference with ``controller: true``, else None."""
    meta = obj.get("metadata")
    refs = meta.get("ownerReferences") if isinstance(meta, Mapping) else None
    if not isinstance(refs, list):
        return None
    for ref in refs:
        if isinstance(ref, Mapping) and ref.get("controller") is True and ref.get("uid"):
            return str(ref["uid"])
    return None
