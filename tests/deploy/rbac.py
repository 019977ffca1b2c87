"""RBAC tables of the rendered chart: ``(apiGroup, resource) -> verbs``, actual and expected."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from .helm import CHART_DIR, by_kind

VALUES = yaml.safe_load((CHART_DIR / "values.yaml").read_text())
READ = frozenset({"get", "list", "watch"})
Rules = dict[tuple[str, str], set[str]]


def rules_by_resource(objects: Sequence[Mapping[str, Any]]) -> Rules:
    """``(apiGroup, resource) -> verbs`` over every rendered ClusterRole (and Role)."""
    table: dict[tuple[str, str], set[str]] = defaultdict(set)
    for role in by_kind(objects, "ClusterRole") + by_kind(objects, "Role"):
        for rule in role.get("rules") or []:
            assert not rule.get("resourceNames") and not rule.get("nonResourceURLs"), rule
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    table[(group, resource)] |= set(rule["verbs"])
    return dict(table)


def expected_rules(*, auth: str = "kubernetes", impersonation: bool = False,
                   extra: Sequence[Mapping[str, Any]] = (), registration: bool = True,
                   karta_status: bool = True) -> Rules:
    """The exact RBAC the chart must grant for these values (see the chart README)."""
    table: dict[tuple[str, str], set[str]] = defaultdict(set)
    for rule in [*VALUES["rbac"]["workloadResources"], *extra]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                table[(group, resource)] |= READ
    table[("", "pods")] |= READ
    table[("apiextensions.k8s.io", "customresourcedefinitions")] |= READ
    table[("run.ai", "kartas")] |= READ | ({"create", "update", "delete"} if registration else set())
    if karta_status:  # the Lease holder writes Karta status (a Role for the Lease in the release namespace)
        table[("run.ai", "kartas/status")] = {"get", "patch"}
        table[("coordination.k8s.io", "leases")] = {"get", "create", "update"}
    if auth == "kubernetes":
        table[("authentication.k8s.io", "tokenreviews")] = {"create"}
        table[("authorization.k8s.io", "subjectaccessreviews")] = {"create"}
    if impersonation:
        for resource in ("users", "groups", "serviceaccounts"):
            table[("", resource)] |= {"impersonate"}
    return dict(table)
