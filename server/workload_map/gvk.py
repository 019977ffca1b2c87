"""Group/version/kind identity shared by every layer.

A GVK names a Kubernetes type (``jobset.x-k8s.io/v1alpha2, Kind=JobSet``). The core
group is the empty string (``v1 Pod``). See the Kubernetes API conventions,
"Resources / Types (Kinds)".
"""

from __future__ import annotations

from typing import Any, Mapping

from msgspec import Struct


class GVK(Struct, frozen=True, order=True):
    """A Kubernetes group, version and kind.

    Attributes:
        group: API group, ``""`` for the core group.
        version: API version within the group (``v1``, ``v1alpha2``).
        kind: CamelCase kind (``JobSet``).
    """

    group: str
    version: str
    kind: str

    @property
    def api_version(self) -> str:
        """The ``apiVersion`` string: ``group/version``, or ``version`` for core."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_kind(self) -> tuple[str, str]:
        """``(group, kind)``: the version-independent identity."""
        return (self.group, self.kind)

    @property
    def slug(self) -> str:
        """Catalog slug: ``<group with dots as dashes | core>-<kind lower>-<version>``."""
        group = self.group.replace(".", "-") if self.group else "core"
        return f"{group}-{self.kind.lower()}-{self.version}"

    def __str__(self) -> str:
        return f"{self.api_version}, Kind={self.kind}"

    @classmethod
    def from_api_version(cls, api_version: str, kind: str) -> "GVK":
        """Build from ``apiVersion`` (``group/version`` or ``version``) and ``kind``."""
        group, _, version = api_version.rpartition("/")
        return cls(group, version, kind)

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> "GVK":
        """The GVK of a Kubernetes object dict (reads ``apiVersion`` and ``kind``).

        Raises:
            ValueError: when ``apiVersion`` or ``kind`` is missing or not a string.
        """
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not isinstance(api_version, str) or not isinstance(kind, str) or not kind:
            raise ValueError("object declares no apiVersion and kind")
        return cls.from_api_version(api_version, kind)


KARTA_GVK = GVK("run.ai", "v1alpha1", "Karta")
"""Karta definitions stored in the cluster (``kartas.run.ai``, cluster-scoped; docs/definition-format.md section 1)."""

POD_GVK = GVK("", "v1", "Pod")
"""Core pods: watched beside every definition's kinds."""
