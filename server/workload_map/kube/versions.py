"""Which version of a kind the cache watches when definitions ask for several.

A kind may be served in several versions (LLMInferenceService ``v1alpha1`` and
``v1alpha2``, Sandbox ``v1alpha1`` and ``v1beta1``, DynamoGraphDeployment ``v1alpha1`` and
``v1beta1``) and the catalog holds a definition for each. The API server stores one copy
of each object and serves it under every served version (with a ``None`` conversion
strategy only ``apiVersion`` changes; with a webhook the object is converted on read:
https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definition-versioning/),
so watching every version caches every object once per version.

Rule: of the watched versions of a group-kind that the API server serves, the cache lists
and watches only the one of highest Kubernetes version priority (GA over beta over alpha,
then the higher major, then the higher minor: the ordering of the document above, also
kubectl's default). Its objects arrive with that ``apiVersion`` and are resolved with the
definition registered for it; the other versions report the elected version's status
(``count`` 0) and list nothing. When the elected version stops being served or watched,
the next one takes over (the cache re-elects on CRD changes, ``watch`` and ``unwatch``).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from workload_map.gvk import GVK
from workload_map.kube.errors import KubeApiError

_VERSION = re.compile(r"v(\d+)(?:(alpha|beta)(\d+))?")
_STAGE = {"alpha": 1, "beta": 2, None: 3}


def version_priority(version: str) -> tuple[int, int, int, int]:
    """Sort key of a Kubernetes API version, highest priority largest.

    ``v1`` > ``v1beta2`` > ``v1beta1`` > ``v1alpha1``; ``v2`` > ``v1``; a version not of
    the form ``vN[alpha|betaM]`` ranks below every one that is.
    """
    match = _VERSION.fullmatch(version)
    if match is None:
        return (0, 0, 0, 0)
    major, stage, minor = match.groups()
    return (1, _STAGE[stage], int(major), int(minor or 0))


async def elect(gvk: GVK, watched: Iterable[GVK], resolve: Callable[[GVK], Awaitable[Any]]) -> GVK:
    """The version of ``gvk``'s group-kind to watch (``gvk`` itself when it is the only one).

    Args:
        gvk: a watched GVK the API server serves.
        watched: every watched GVK.
        resolve: discovery (``Discovery.resolve``): ``None`` when a GVK is not served.

    Returns:
        The served sibling (or ``gvk``) of highest ``version_priority``; a sibling whose
        discovery fails counts as not served.
    """
    served = [gvk]
    for sibling in sorted(g for g in watched if g.group_kind == gvk.group_kind and g != gvk):
        try:
            if await resolve(sibling) is not None:
                served.append(sibling)
        except KubeApiError:
            continue
    return max(served, key=lambda g: (version_priority(g.version), g.version))
