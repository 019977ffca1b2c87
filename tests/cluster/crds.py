"""CRD manifests for the test control plane.

Two sources:

* ``own_crds()``: the project's own minimal CRDs, built here (one version, Namespaced unless
  noted, ``status`` subresource, schema ``x-kubernetes-preserve-unknown-fields: true``) for every
  workload type the catalog covers, plus the cluster-scoped Karta CRD ``kartas.run.ai``.
* ``shared_crds()``: the operators' published CRDs read from the shared folder next to the
  repository (``<repo>/../shared/crds``, or ``$WMAP_SHARED_DIR/crds``), never copied into the
  repository. They replace the minimal CRD of the same ``<plural>.<group>``; each is trimmed for a
  bare apiserver (only the storage version, no ``spec.conversion``, no ``status``).
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass
from pathlib import Path

import yaml

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class CrdSpec:
    """One minimal CRD: API group, served/storage version, kind, plural, scope, short names."""

    group: str
    version: str
    kind: str
    plural: str
    scope: str = "Namespaced"
    short_names: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The CRD object name, ``<plural>.<group>``."""
        return f"{self.plural}.{self.group}"


OWN_CRDS: tuple[CrdSpec, ...] = (
    CrdSpec("jobset.x-k8s.io", "v1alpha2", "JobSet", "jobsets"),
    CrdSpec("kubeflow.org", "v1", "PyTorchJob", "pytorchjobs"),
    CrdSpec("kubeflow.org", "v2beta1", "MPIJob", "mpijobs"),
    CrdSpec("ray.io", "v1", "RayCluster", "rayclusters"),
    CrdSpec("ray.io", "v1", "RayJob", "rayjobs"),
    CrdSpec("ray.io", "v1", "RayService", "rayservices"),
    CrdSpec("serving.kserve.io", "v1beta1", "InferenceService", "inferenceservices"),
    CrdSpec("serving.knative.dev", "v1", "Service", "services"),
    CrdSpec("serving.knative.dev", "v1", "Revision", "revisions"),
    CrdSpec("serving.knative.dev", "v1", "Configuration", "configurations"),
    CrdSpec("apps.nvidia.com", "v1alpha1", "NIMService", "nimservices"),
    CrdSpec("apps.nvidia.com", "v1alpha1", "NIMCache", "nimcaches"),
    CrdSpec("leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet", "leaderworkersets"),
    CrdSpec("milvus.io", "v1beta1", "Milvus", "milvuses"),
    CrdSpec("grove.io", "v1alpha1", "PodCliqueSet", "podcliquesets"),
    CrdSpec("grove.io", "v1alpha1", "PodClique", "podcliques"),
    CrdSpec("grove.io", "v1alpha1", "PodCliqueScalingGroup", "podcliquescalinggroups"),
    CrdSpec("nvidia.com", "v1alpha1", "DynamoGraphDeployment", "dynamographdeployments"),
    # issue 14 (catalog): the types teams run beside the upstream ones
    CrdSpec("kubeflow.org", "v1", "TFJob", "tfjobs"),
    CrdSpec("kubeflow.org", "v1", "XGBoostJob", "xgboostjobs"),
    CrdSpec("kubeflow.org", "v1", "PaddleJob", "paddlejobs"),
    CrdSpec("kubeflow.org", "v1", "JAXJob", "jaxjobs"),
    CrdSpec("batch.volcano.sh", "v1alpha1", "Job", "jobs"),
    CrdSpec("trainer.kubeflow.org", "v1alpha1", "TrainJob", "trainjobs"),
    CrdSpec("serving.kserve.io", "v1alpha2", "LLMInferenceService", "llminferenceservices"),
    CrdSpec("agents.x-k8s.io", "v1beta1", "Sandbox", "sandboxes"),
    CrdSpec("sparkoperator.k8s.io", "v1beta2", "SparkApplication", "sparkapplications"),
    CrdSpec("sparkoperator.k8s.io", "v1beta2", "ScheduledSparkApplication", "scheduledsparkapplications"),
    CrdSpec("argoproj.io", "v1alpha1", "Workflow", "workflows"),
    CrdSpec("workload.codeflare.dev", "v1beta2", "AppWrapper", "appwrappers"),
    CrdSpec("run.ai", "v1alpha1", "Karta", "kartas", scope="Cluster", short_names=("krt",)),
)


def minimal_crd(spec: CrdSpec) -> dict:
    """Build the ``apiextensions.k8s.io/v1`` CRD manifest (a dict) for ``spec``."""
    names: dict = {
        "kind": spec.kind,
        "listKind": f"{spec.kind}List",
        "plural": spec.plural,
        "singular": spec.kind.lower(),
    }
    if spec.short_names:
        names["shortNames"] = list(spec.short_names)
    metadata: dict = {"name": spec.name, "labels": {"wmap.test/crd-source": "own"}}
    if spec.group.endswith((".k8s.io", ".kubernetes.io")) and not spec.group.endswith(".x-k8s.io"):
        # protected API groups need this annotation (https://github.com/kubernetes/enhancements/pull/1111)
        metadata["annotations"] = {"api-approved.kubernetes.io": "unapproved, test fixture only"}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": metadata,
        "spec": {
            "group": spec.group,
            "names": names,
            "scope": spec.scope,
            "versions": [
                {
                    "name": spec.version,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


def own_crds() -> list[dict]:
    """All minimal CRD manifests of ``OWN_CRDS`` (new dicts on every call)."""
    return [minimal_crd(s) for s in OWN_CRDS]


def shared_crds_dir() -> Path:
    """``$WMAP_SHARED_DIR/crds`` if the variable is set, else ``<repo>/../shared/crds``.

    The directory may not exist; callers check.
    """
    env = os.environ.get("WMAP_SHARED_DIR")
    if env:
        return Path(env) / "crds"
    return Path(__file__).resolve().parents[2].parent / "shared" / "crds"


def prepare_shared(manifest: dict) -> dict:
    """Return a copy of an operator CRD trimmed for a bare test apiserver.

    Multi-version CRDs keep only their storage version (served); ``spec.conversion``,
    ``status`` and ``metadata`` fields other than name/labels/annotations are dropped.
    Raises ``ValueError`` if the manifest is not a v1 CRD or has no storage version.
    """
    if manifest.get("kind") != "CustomResourceDefinition" or not str(
        manifest.get("apiVersion", "")
    ).startswith("apiextensions.k8s.io/"):
        raise ValueError("not an apiextensions.k8s.io CustomResourceDefinition")
    out = copy.deepcopy(manifest)
    out.pop("status", None)
    meta = out.get("metadata") or {}
    out["metadata"] = {k: meta[k] for k in ("name", "labels", "annotations") if k in meta}
    out["metadata"].setdefault("labels", {})["wmap.test/crd-source"] = "shared"
    spec = out["spec"]
    spec.pop("conversion", None)
    storage = [v for v in spec.get("versions", []) if v.get("storage")]
    if len(storage) != 1:
        raise ValueError(f"{meta.get('name')}: expected one storage version, got {len(storage)}")
    storage[0]["served"] = True
    spec["versions"] = storage
    return out


def _key(manifest: dict) -> str:
    return manifest["metadata"]["name"]


def shared_crds(directory: Path | None = None) -> list[dict]:
    """Load and trim every ``*.yaml`` CRD of the shared folder (sorted by file name).

    Returns ``[]`` when the folder does not exist. MPIJob is taken only at ``v2beta1``
    (a ``mpijobs.kubeflow.org`` file with another storage version is skipped). Raises
    ``ValueError`` for a file that is not exactly one CRD document.
    """
    directory = directory or shared_crds_dir()
    if not directory.is_dir():
        return []
    out: list[dict] = []
    for path in sorted(directory.glob("*.yaml")):
        docs = [d for d in yaml.load_all(path.read_text(), Loader=_Loader) if d]
        if len(docs) != 1:
            raise ValueError(f"{path.name}: expected one YAML document, got {len(docs)}")
        crd = prepare_shared(docs[0])
        if _key(crd) == "mpijobs.kubeflow.org" and crd["spec"]["versions"][0]["name"] != "v2beta1":
            continue
        out.append(crd)
    return out


def merged_crds(directory: Path | None = None) -> list[dict]:
    """Shared CRDs (when present) plus the own minimal CRDs they do not replace.

    Replacement is by CRD name ``<plural>.<group>``. Shared CRDs come first.
    """
    shared = shared_crds(directory)
    taken = {_key(c) for c in shared}
    return shared + [c for c in own_crds() if _key(c) not in taken]
