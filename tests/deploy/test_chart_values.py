"""Chart values added for issue 16: schema, image, ephemeral storage, egress policy,
anti-affinity, read-only Karta access and the ``helm test`` hook (rendered with helm).

Needs helm (``bash tests/deploy/build-helm.sh``); skips without it, fails when ``CI=true``.
``test_chart_cluster.py`` creates these renders in a real API server (server-side dry run).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence

import pytest
import yaml

from .helm import CHART_DIR, one, run_helm, template
from .rbac import READ, expected_rules, rules_by_resource

VALUES = yaml.safe_load((CHART_DIR / "values.yaml").read_text())
SELECTOR = {"app.kubernetes.io/name": "workload-map-server", "app.kubernetes.io/instance": "wmap"}


def pod_spec(objects: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    return one(objects, "Deployment")["spec"]["template"]["spec"]


def render_fails(helm: Path, *sets: str) -> str:
    """helm's stderr for a render that must fail."""
    out = run_helm(helm, "template", "wmap", str(CHART_DIR), *[a for s in sets for a in ("--set", s)])
    assert out.returncode != 0, f"rendered although {sets} is invalid"
    return out.stderr


# ---- values.schema.json -------------------------------------------------------------------------

@pytest.mark.parametrize("sets, message", [
    (["replicaCount=two"], "at '/replicaCount': got string, want integer"),
    (["replicaCount=-1"], "/replicaCount"),
    (["replicaCounts=2"], "additional properties 'replicaCounts' not allowed"),
    (["image.pullPolicy=Sometimes"], "/image/pullPolicy"),
    (["service.port=70000"], "/service/port"),
    (["podAntiAffinity=maybe"], "/podAntiAffinity"),
    (["networkPolicy.egress.apiServerCIDRs={10.0.0.1}"], "/networkPolicy/egress/apiServerCIDRs/0"),
    (["rbac.allowRegistration=nope"], "/rbac/allowRegistration"),
])
def test_schema_rejects_bad_values(helm: Path, sets: list[str], message: str) -> None:
    assert message in render_fails(helm, *sets)


def test_schema_is_valid_json_schema_and_covers_every_value() -> None:
    schema = json.loads((CHART_DIR / "values.schema.json").read_text())
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    # every top-level value of values.yaml is described (additionalProperties is false)
    assert set(VALUES) <= set(schema["properties"]) and schema["additionalProperties"] is False


# ---- image ----------------------------------------------------------------------------------------

def test_default_image_is_fully_qualified(helm: Path) -> None:
    # a registry host (with a dot) first: no short-name resolution by the container runtime
    image = pod_spec(template(helm))["containers"][0]["image"]
    host, _, rest = image.partition("/")
    assert "." in host and image == f"{VALUES['image']['repository']}:0.1.0" and rest.endswith(":0.1.0")


# ---- ephemeral storage ------------------------------------------------------------------------------

def test_ephemeral_storage_requests_limits_and_volume_limits(helm: Path) -> None:
    spec = pod_spec(template(helm))
    resources = spec["containers"][0]["resources"]
    # the limit (512Mi) covers both emptyDirs (64Mi + 64Mi) with room for logs; request 128Mi
    assert resources["requests"]["ephemeral-storage"] == "128Mi"
    assert resources["limits"]["ephemeral-storage"] == "512Mi"
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["state"]["emptyDir"] == {"sizeLimit": "64Mi"} and volumes["tmp"]["emptyDir"] == {"sizeLimit": "64Mi"}
    spec = pod_spec(template(helm, sets=["tmpDirSizeLimit=1Gi", "resources.limits.ephemeral-storage=2Gi"]))
    assert {v["name"]: v for v in spec["volumes"]}["tmp"]["emptyDir"] == {"sizeLimit": "1Gi"}
    assert spec["containers"][0]["resources"]["limits"]["ephemeral-storage"] == "2Gi"


# ---- anti-affinity ----------------------------------------------------------------------------------

def test_anti_affinity_only_with_several_replicas(helm: Path) -> None:
    term = {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": SELECTOR}}
    assert "affinity" not in pod_spec(template(helm))  # one replica: nothing to spread
    soft = pod_spec(template(helm, sets=["replicaCount=2"]))["affinity"]
    assert soft == {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": term}]}}
    hard = pod_spec(template(helm, sets=["replicaCount=3", "podAntiAffinity=hard"]))["affinity"]
    assert hard == {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    assert "affinity" not in pod_spec(template(helm, sets=["replicaCount=3", "podAntiAffinity=none"]))
    # an explicit affinity replaces the chart's
    own = pod_spec(template(helm, sets=["replicaCount=2", "affinity.nodeAffinity.x=1"]))["affinity"]
    assert own == {"nodeAffinity": {"x": 1}}


# ---- egress NetworkPolicy ----------------------------------------------------------------------------

def test_egress_policy_allows_dns_and_the_api_server_only(helm: Path) -> None:
    policy = one(template(helm, sets=["networkPolicy.egress.enabled=true",
                                      "networkPolicy.egress.apiServerCIDRs={10.96.0.1/32,172.18.0.2/32}"]),
                 "NetworkPolicy")["spec"]
    assert policy["podSelector"] == {"matchLabels": SELECTOR}
    assert policy["policyTypes"] == ["Egress"] and "ingress" not in policy
    dns, api = policy["egress"]
    assert dns["ports"] == [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]
    assert dns["to"] == VALUES["networkPolicy"]["egress"]["dnsTo"]
    assert api == {"ports": [{"port": 443, "protocol": "TCP"}, {"port": 6443, "protocol": "TCP"}],
                   "to": [{"ipBlock": {"cidr": "10.96.0.1/32"}}, {"ipBlock": {"cidr": "172.18.0.2/32"}}]}


def test_ingress_and_egress_in_one_policy_with_extra_rules(helm: Path, tmp_path: Path) -> None:
    proxy = {"to": [{"ipBlock": {"cidr": "10.1.2.3/32"}}], "ports": [{"port": 3128, "protocol": "TCP"}]}
    policy = one(template(helm, values={"networkPolicy": {"enabled": True, "egress": {"enabled": True,
                                                                                      "extraTo": [proxy]}}},
                          tmp_path=tmp_path), "NetworkPolicy")["spec"]
    assert policy["policyTypes"] == ["Ingress", "Egress"]
    assert policy["ingress"] == [{"ports": [{"port": "http", "protocol": "TCP"}]}]
    # no CIDRs: the API server ports to any address; then the extra rule
    assert [r.get("to") for r in policy["egress"][1:]] == [None, proxy["to"]]


# ---- read-only Karta access ----------------------------------------------------------------------------

def test_allow_registration_false_drops_the_karta_writes(helm: Path) -> None:
    rules = rules_by_resource(template(helm, sets=["rbac.allowRegistration=false"]))
    assert rules[("run.ai", "kartas")] == set(READ)
    assert rules == expected_rules(registration=False)
    message = render_fails(helm, "rbac.allowRegistration=false", "impersonation.enabled=true")
    assert "impersonation.enabled needs rbac.allowRegistration=true" in message


# ---- helm test ----------------------------------------------------------------------------------------

def test_helm_test_hook_checks_the_service(helm: Path) -> None:
    objects = template(helm)
    pod = one(objects, "Pod")
    assert pod["metadata"]["annotations"] == {"helm.sh/hook": "test",
                                              "helm.sh/hook-delete-policy": "before-hook-creation,hook-succeeded"}
    # not selected by the Service (selector labels differ in app.kubernetes.io/name)
    service_selector = one(objects, "Service")["spec"]["selector"]
    assert not service_selector.items() <= pod["metadata"]["labels"].items()
    (check,) = pod["spec"]["containers"]
    assert check["image"] == pod_spec(objects)["containers"][0]["image"]
    assert check["command"] == ["python", "-c"]
    script = check["args"][0]
    assert '"http://wmap-workload-map-server.workload-map.svc:80"' in script
    assert all(path in script for path in ('"/livez"', '"/readyz"', '"/metrics"'))
    compile(script, "helm-test", "exec")  # the rendered script is valid Python
    assert pod["spec"]["restartPolicy"] == "Never" and check["securityContext"]["readOnlyRootFilesystem"] is True
    assert not [o for o in template(helm, sets=["tests.enabled=false"]) if o["kind"] == "Pod"]
