"""The Helm chart rendered with helm: lint, objects per toggle, labels, probes, security, RBAC.

Needs helm (``bash tests/deploy/build-helm.sh``); skips without it, fails when ``CI=true``.
The rendered objects are created in a real API server in ``test_chart_cluster.py``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping, Sequence

import pytest
import yaml

from .helm import CHART_DIR, REPO_ROOT, by_kind, one, run_helm, template
from .kinds import catalog_gvks, guess_plural
from .rbac import READ, expected_rules, rules_by_resource

CHART = yaml.safe_load((CHART_DIR / "Chart.yaml").read_text())
RELEASE, NAMESPACE = "wmap", "workload-map"
FULLNAME = "wmap-workload-map-server"

TOGGLES_ON = {
    "podDisruptionBudget": {"enabled": True},
    "networkPolicy": {"enabled": True, "ingressFrom": [{"namespaceSelector": {"matchLabels": {"team": "ml"}}}]},
    "serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}},
    "auth": {"mode": "kubernetes"},
    "impersonation": {"enabled": True},
    "replicaCount": 3,
    "extraDefinitions": {"example-com-trainjob-v1.yaml": {"apiVersion": "run.ai/v1alpha1", "kind": "Karta"}},
    "rbac": {"extraRules": [{"apiGroups": ["example.com"], "resources": ["trainjobs"]}]},
    "server": {"gpuResourceNames": ["example.com/gpu"], "logFormat": "text"},
}

@pytest.fixture(scope="module")
def default_objects(helm: Path) -> list[dict[str, Any]]:
    return template(helm, release=RELEASE, namespace=NAMESPACE)


@pytest.fixture(scope="module")
def toggled_objects(helm: Path, tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    return template(helm, release=RELEASE, namespace=NAMESPACE, values=TOGGLES_ON,
                    tmp_path=tmp_path_factory.mktemp("values"))


def container(objects: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    pod = one(objects, "Deployment")["spec"]["template"]["spec"]
    assert [c["name"] for c in pod["containers"]] == ["server"]
    return pod["containers"][0]


def env(objects: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in container(objects)["env"]}


# ---- lint ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("values", [{}, TOGGLES_ON, {"auth": {"mode": "none"}, "installKartaCRD": False,
                                                      "namespaces": ["team-a", "team-b"]}],
                         ids=["defaults", "toggles-on", "auth-none-allow-list"])
def test_helm_lint_strict(helm: Path, tmp_path: Path, values: dict) -> None:
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    out = run_helm(helm, "lint", "--strict", str(CHART_DIR), "--values", str(path))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 chart(s) linted, 0 chart(s) failed" in out.stdout
    assert "[WARNING]" not in out.stdout and "[ERROR]" not in out.stdout, out.stdout
    assert "[INFO]" not in out.stdout, out.stdout  # no notes either (icon, metadata)


CI_VALUES = sorted((CHART_DIR / "ci").glob("*-values.yaml"))


@pytest.mark.parametrize("path", CI_VALUES, ids=[p.name for p in CI_VALUES])
def test_helm_lint_strict_on_every_chart_testing_values_file(helm: Path, path: Path) -> None:
    # what `ct lint` runs per ci/*-values.yaml (deploy/helm/ct.yaml), besides its yamllint pass
    out = run_helm(helm, "lint", "--strict", str(CHART_DIR), "--values", str(path))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 chart(s) linted, 0 chart(s) failed" in out.stdout
    assert not {"[INFO]", "[WARNING]", "[ERROR]"} & set(out.stdout.split()), out.stdout


def test_chart_testing_values_files_exist_and_the_metadata_is_complete() -> None:
    assert {p.name for p in CI_VALUES} >= {"default-values.yaml", "toggles-values.yaml", "allow-list-values.yaml"}
    for key in ("home", "sources", "maintainers", "icon"):
        assert CHART.get(key), f"Chart.yaml has no {key}"
    assert CHART["icon"].endswith("/deploy/helm/workload-map-server/icon.svg")
    assert (CHART_DIR / "icon.svg").read_text().lstrip().startswith("<svg")


# ---- what is rendered ---------------------------------------------------------------------------

def test_default_render_has_exactly_the_core_objects(default_objects: list[dict]) -> None:
    kinds = sorted(o["kind"] for o in default_objects)
    assert kinds == sorted(["ServiceAccount", "CustomResourceDefinition", "ClusterRole", "ClusterRole",
                            "ClusterRoleBinding", "ClusterRoleBinding", "Service", "Deployment",
                            "Role", "RoleBinding",  # the Karta status Lease
                            "Pod"])  # the Pod is the `helm test` hook


def test_toggles_add_their_objects(toggled_objects: list[dict]) -> None:
    kinds = sorted(o["kind"] for o in toggled_objects)
    assert kinds == sorted(["ServiceAccount", "CustomResourceDefinition", "ClusterRole", "ClusterRole",
                            "ClusterRoleBinding", "ClusterRoleBinding", "Service", "Deployment", "Role", "RoleBinding",
                            "PodDisruptionBudget", "NetworkPolicy", "ServiceMonitor", "ConfigMap", "Pod"])


def test_every_object_has_the_standard_labels(default_objects: list[dict], toggled_objects: list[dict]) -> None:
    for obj in default_objects + toggled_objects:
        labels = obj["metadata"]["labels"]
        what = f"{obj['kind']}/{obj['metadata']['name']}"
        # the helm test Pod must not carry the selector labels (the Service would pick it)
        name = "workload-map-server-test" if obj["kind"] == "Pod" else "workload-map-server"
        assert labels["app.kubernetes.io/name"] == name, what
        assert labels["app.kubernetes.io/instance"] == RELEASE, what
        assert labels["app.kubernetes.io/managed-by"] == "Helm", what
        assert labels["app.kubernetes.io/version"] == CHART["appVersion"], what
        assert labels["helm.sh/chart"] == f"workload-map-server-{CHART['version']}", what
        assert "app.kubernetes.io/component" in labels, what
        if obj["kind"] not in ("ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition"):
            assert obj["metadata"]["namespace"] == NAMESPACE, what


def test_selectors_match_pod_labels(toggled_objects: list[dict]) -> None:
    deploy = one(toggled_objects, "Deployment")
    pod_labels = deploy["spec"]["template"]["metadata"]["labels"]
    selector = deploy["spec"]["selector"]["matchLabels"]
    assert selector == {"app.kubernetes.io/name": "workload-map-server", "app.kubernetes.io/instance": RELEASE}
    for sel in (one(toggled_objects, "Service")["spec"]["selector"],
                one(toggled_objects, "PodDisruptionBudget")["spec"]["selector"]["matchLabels"],
                one(toggled_objects, "NetworkPolicy")["spec"]["podSelector"]["matchLabels"],
                one(toggled_objects, "ServiceMonitor")["spec"]["selector"]["matchLabels"]):
        assert sel == selector
        assert sel.items() <= pod_labels.items()


# ---- Deployment ---------------------------------------------------------------------------------

def test_deployment_probes(default_objects: list[dict]) -> None:
    c = container(default_objects)
    assert c["ports"] == [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]
    assert c["livenessProbe"]["httpGet"] == {"path": "/livez", "port": "http"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert c["startupProbe"]["httpGet"] == {"path": "/livez", "port": "http"}
    svc = one(default_objects, "Service")
    assert svc["spec"]["ports"] == [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}]


def test_deployment_runs_non_root_with_read_only_root(default_objects: list[dict]) -> None:
    pod = one(default_objects, "Deployment")["spec"]["template"]["spec"]
    psc, csc = pod["securityContext"], container(default_objects)["securityContext"]
    assert psc["runAsNonRoot"] is True and psc["runAsUser"] > 0
    assert psc["seccompProfile"] == {"type": "RuntimeDefault"}
    assert csc["runAsNonRoot"] is True and csc["runAsUser"] > 0
    assert csc["readOnlyRootFilesystem"] is True
    assert csc["allowPrivilegeEscalation"] is False
    assert csc["privileged"] is False
    assert csc["capabilities"] == {"drop": ["ALL"]}
    assert pod["serviceAccountName"] == FULLNAME
    # writable paths are emptyDirs: the state dir (WMAP_STATE_DIR) and /tmp
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m["name"] for m in container(default_objects)["volumeMounts"]}
    state_dir = env(default_objects)["WMAP_STATE_DIR"]
    assert "emptyDir" in volumes[mounts[state_dir]]
    assert "emptyDir" in volumes[mounts["/tmp"]]


def test_deployment_passes_settings_as_environment(default_objects: list[dict], toggled_objects: list[dict]) -> None:
    c = container(default_objects)
    assert c["image"] == f"ghcr.io/workload-map/workload-map-server:{CHART['appVersion']}"
    assert c["args"] == ["--port", "8080"]
    assert "command" not in c  # the image's entrypoint (`wmap serve --host 0.0.0.0`) runs
    e = env(default_objects)
    assert e["WMAP_AUTH"] == "kubernetes" and e["WMAP_IMPERSONATE"] == "false"
    assert e["WMAP_NAMESPACES"] == "" and e["WMAP_LOG_FORMAT"] == "json" and e["WMAP_PORT"] == "8080"
    assert "WMAP_DEFINITIONS_DIR" not in e
    # metric series bounded by default: per-workload on, per-pod opt-in (docs/metrics-series.md)
    assert (e["WMAP_WORKLOAD_METRICS"], e["WMAP_POD_METRICS"]) == ("true", "false")
    t = env(toggled_objects)
    assert t["WMAP_IMPERSONATE"] == "true" and t["WMAP_GPU_RESOURCES"] == "example.com/gpu"
    assert t["WMAP_LOG_FORMAT"] == "text"
    assert one(toggled_objects, "Deployment")["spec"]["replicas"] == 3


def test_extra_definitions_become_a_mounted_config_map(toggled_objects: list[dict], helm: Path) -> None:
    cm = one(toggled_objects, "ConfigMap")
    doc = yaml.safe_load(cm["data"]["example-com-trainjob-v1.yaml"])
    assert doc == {"apiVersion": "run.ai/v1alpha1", "kind": "Karta"}
    pod = one(toggled_objects, "Deployment")["spec"]["template"]["spec"]
    assert {"name": "definitions", "configMap": {"name": cm["metadata"]["name"]}} in pod["volumes"]
    mount = next(m for m in container(toggled_objects)["volumeMounts"] if m["name"] == "definitions")
    assert mount["readOnly"] is True and env(toggled_objects)["WMAP_DEFINITIONS_DIR"] == mount["mountPath"]
    # an existing ConfigMap is mounted, none is created
    objs = template(helm, sets=["extraDefinitionsConfigMap=my-kartas"])
    assert not by_kind(objs, "ConfigMap")
    vols = one(objs, "Deployment")["spec"]["template"]["spec"]["volumes"]
    assert {"name": "definitions", "configMap": {"name": "my-kartas"}} in vols


def test_image_digest_wins_over_tag(helm: Path) -> None:
    objs = template(helm, sets=["image.repository=registry.example/wmap", "image.tag=1.2.3",
                                "image.digest=sha256:" + "a" * 64])
    assert container(objs)["image"] == "registry.example/wmap@sha256:" + "a" * 64
    objs = template(helm, sets=["image.repository=registry.example/wmap", "image.tag=1.2.3"])
    assert container(objs)["image"] == "registry.example/wmap:1.2.3"


@pytest.mark.parametrize("sets, message", [
    # values.schema.json answers first for enums; the template's own checks stay as a second line
    (["auth.mode=oidc"], "at '/auth/mode': value must be one of 'kubernetes', 'none'"),
    (["auth.mode=none", "impersonation.enabled=true"], "impersonation.enabled needs auth.mode=kubernetes"),
    (["server.logFormat=xml"], "at '/server/logFormat': value must be one of 'json', 'text'"),
])
def test_bad_values_fail_rendering(helm: Path, sets: list[str], message: str) -> None:
    args = ["template", "x", str(CHART_DIR)] + [a for s in sets for a in ("--set", s)]
    out = run_helm(helm, *args)
    assert out.returncode != 0 and message in out.stderr, out.stderr


# ---- optional objects ---------------------------------------------------------------------------

def test_pdb_network_policy_service_monitor(toggled_objects: list[dict], helm: Path) -> None:
    assert one(toggled_objects, "PodDisruptionBudget")["spec"]["maxUnavailable"] == 1
    objs = template(helm, sets=["podDisruptionBudget.enabled=true", "podDisruptionBudget.minAvailable=2"])
    spec = one(objs, "PodDisruptionBudget")["spec"]
    assert spec["minAvailable"] == 2 and "maxUnavailable" not in spec
    np = one(toggled_objects, "NetworkPolicy")["spec"]
    assert np["policyTypes"] == ["Ingress"]
    assert np["ingress"] == [{"ports": [{"port": "http", "protocol": "TCP"}],
                              "from": [{"namespaceSelector": {"matchLabels": {"team": "ml"}}}]}]
    sm = one(toggled_objects, "ServiceMonitor")
    assert sm["apiVersion"] == "monitoring.coreos.com/v1"
    assert sm["metadata"]["labels"]["release"] == "prometheus"
    assert sm["spec"]["endpoints"][0]["port"] == "http" and sm["spec"]["endpoints"][0]["path"] == "/metrics"
    assert sm["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}


def test_karta_crd_toggle(default_objects: list[dict], helm: Path) -> None:
    crd = one(default_objects, "CustomResourceDefinition")
    source = yaml.safe_load((REPO_ROOT / "deploy" / "crds" / "kartas.run.ai.yaml").read_text())
    assert crd["spec"] == source["spec"]
    assert crd["metadata"]["name"] == "kartas.run.ai"
    assert crd["metadata"]["annotations"] == {"helm.sh/resource-policy": "keep"}
    assert crd["metadata"]["labels"]["app.kubernetes.io/component"] == "crd"
    assert not by_kind(template(helm, sets=["installKartaCRD=false"]), "CustomResourceDefinition")


def test_chart_crd_file_is_the_deploy_crd() -> None:
    """The chart cannot read outside its folder: files/ holds a byte-identical copy."""
    chart_copy = CHART_DIR / "files" / "kartas.run.ai.yaml"
    assert chart_copy.read_bytes() == (REPO_ROOT / "deploy" / "crds" / "kartas.run.ai.yaml").read_bytes(), (
        "copy deploy/crds/kartas.run.ai.yaml to deploy/helm/workload-map-server/files/")


# ---- RBAC ---------------------------------------------------------------------------------------

def test_rbac_default_exact_verbs(default_objects: list[dict]) -> None:
    assert rules_by_resource(default_objects) == expected_rules()
    # nothing beyond reading, except Karta writes and the two review creates
    writes = {k: v - READ for k, v in rules_by_resource(default_objects).items() if v - READ}
    assert writes == {("run.ai", "kartas"): {"create", "update", "delete"},
                      ("run.ai", "kartas/status"): {"patch"},
                      ("coordination.k8s.io", "leases"): {"create", "update"},
                      ("authentication.k8s.io", "tokenreviews"): {"create"},
                      ("authorization.k8s.io", "subjectaccessreviews"): {"create"}}


def test_rbac_auth_none_has_no_reviews(helm: Path) -> None:
    objs = template(helm, sets=["auth.mode=none"])
    assert rules_by_resource(objs) == expected_rules(auth="none")


def test_rbac_impersonation_only_when_enabled(default_objects: list[dict], toggled_objects: list[dict]) -> None:
    assert not any("impersonate" in v for v in rules_by_resource(default_objects).values())
    assert rules_by_resource(toggled_objects) == expected_rules(
        impersonation=True, extra=TOGGLES_ON["rbac"]["extraRules"])


def test_rbac_no_wildcards(toggled_objects: list[dict]) -> None:
    for role in by_kind(toggled_objects, "ClusterRole"):
        for rule in role["rules"]:
            for field in ("apiGroups", "resources", "verbs"):
                assert "*" not in rule[field] and not any("*" in x for x in rule[field]), rule


def test_rbac_bindings_point_at_the_service_account(default_objects: list[dict]) -> None:
    sa = one(default_objects, "ServiceAccount")["metadata"]["name"]
    bindings = by_kind(default_objects, "ClusterRoleBinding")
    roles = {r["metadata"]["name"] for r in by_kind(default_objects, "ClusterRole")}
    assert {b["roleRef"]["name"] for b in bindings} == roles
    for b in bindings:
        assert b["subjects"] == [{"kind": "ServiceAccount", "name": sa, "namespace": NAMESPACE}]


def test_rbac_namespace_allow_list_uses_role_bindings(helm: Path) -> None:
    objs = template(helm, release=RELEASE, namespace=NAMESPACE, sets=["namespaces={team-a,team-b}"])
    rbs = [rb for rb in by_kind(objs, "RoleBinding") if rb["metadata"]["name"].endswith("-workloads")]
    assert sorted(rb["metadata"]["namespace"] for rb in rbs) == ["team-a", "team-b"]
    assert {rb["roleRef"]["name"] for rb in rbs} == {f"{FULLNAME}-workloads"}
    crbs = by_kind(objs, "ClusterRoleBinding")
    assert [b["roleRef"]["name"] for b in crbs] == [FULLNAME]  # cluster-wide: CRDs, Kartas, reviews only
    assert env(objs)["WMAP_NAMESPACES"] == "team-a,team-b"
    assert rules_by_resource(objs) == expected_rules()


def test_rbac_create_false_and_existing_service_account(helm: Path) -> None:
    objs = template(helm, sets=["rbac.create=false", "serviceAccount.create=false", "serviceAccount.name=wmap-sa"])
    assert not [o for o in objs if o["kind"] in ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
                                                 "ServiceAccount")]
    assert one(objs, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == "wmap-sa"


def test_rbac_covers_every_catalog_kind(default_objects: list[dict]) -> None:
    """Every kind of the catalog is readable (plural as Kubernetes guesses it; the cluster test
    checks the real plurals through discovery)."""
    rules = rules_by_resource(default_objects)
    missing = sorted(f"{g or 'core'}/{guess_plural(k)}" for g, _v, k in catalog_gvks()
                     if not READ <= rules.get((g, guess_plural(k)), set()))
    assert not missing, f"add to rbac.workloadResources in values.yaml: {missing}"


# ---- values.yaml is documented ------------------------------------------------------------------

def test_every_value_is_documented() -> None:
    """Each leaf key of values.yaml has a comment right above it, or sits (at any depth) in a
    block whose key has one (e.g. ``resources``: a Kubernetes object documented as a whole)."""
    lines = (CHART_DIR / "values.yaml").read_text().splitlines()
    key_re = re.compile(r"^(\s*)(- )?([A-Za-z][\w./-]*):(.*)$")
    stack: list[tuple[int, bool]] = []  # (indent, documented) of the enclosing keys
    undocumented = []
    for i, line in enumerate(lines):
        m = key_re.match(line)
        if not m:
            continue
        indent = len(m.group(1)) + (2 if m.group(2) else 0)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        prev = next((ln for ln in reversed(lines[:i]) if ln.strip()), "")
        documented = prev.lstrip().startswith("#") or any(d for _, d in stack)
        nxt = next((ln for ln in lines[i + 1:] if ln.strip() and not ln.lstrip().startswith("#")), "")
        is_block = not m.group(4).strip() and len(nxt) - len(nxt.lstrip()) > len(m.group(1))
        if not is_block and not documented:
            undocumented.append(f"line {i + 1}: {m.group(3)}")
        stack.append((indent, documented))
    assert not undocumented, undocumented
