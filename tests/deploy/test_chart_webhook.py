"""The chart's Karta webhook and status pieces rendered with helm (off, generated CA, cert-manager)."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any, Mapping, Sequence

import pytest
import yaml
from cryptography import x509

from .helm import CHART_DIR, by_kind, one, run_helm, template

RELEASE, NAMESPACE, FULLNAME = "wmap", "workload-map", "wmap-workload-map-server"
WEBHOOK_KINDS = ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")


def server(objects: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    return one(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]


def test_webhook_off_by_default(helm: Path) -> None:
    objs = template(helm, release=RELEASE, namespace=NAMESPACE)
    assert not [o for o in objs if o["kind"] in (*WEBHOOK_KINDS, "Secret", "Certificate", "Issuer")]
    assert "--webhook-port" not in server(objs)["args"]
    assert [p["name"] for p in one(objs, "Service")["spec"]["ports"]] == ["http"]
    # the status writer is on: its Lease Role in the release namespace
    role = one(objs, "Role")
    assert role["metadata"]["namespace"] == NAMESPACE
    assert role["rules"] == [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                              "verbs": ["get", "create", "update"]}]


def test_status_off_drops_the_lease_role_and_passes_the_flag(helm: Path) -> None:
    objs = template(helm, sets=["kartaStatus.enabled=false"])
    assert not by_kind(objs, "Role") and not by_kind(objs, "RoleBinding")
    assert "--no-karta-status" in server(objs)["args"]
    rules = [r for role in by_kind(objs, "ClusterRole") for r in role["rules"]]
    assert not any("kartas/status" in r["resources"] for r in rules)


def test_generated_ca_signs_the_serving_certificate_for_the_service(helm: Path) -> None:
    objs = template(helm, release=RELEASE, namespace=NAMESPACE, sets=["webhook.enabled=true"])
    secret = one(objs, "Secret")
    assert secret["metadata"]["name"] == f"{FULLNAME}-webhook-tls" and secret["type"] == "kubernetes.io/tls"
    ca = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["ca.crt"]))
    cert = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    cert.verify_directly_issued_by(ca)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
        x509.DNSName)
    assert f"{FULLNAME}.{NAMESPACE}.svc" in names
    for kind, path in zip(WEBHOOK_KINDS, ("/validate-karta", "/mutate-karta")):
        (hook,) = one(objs, kind)["webhooks"]
        assert hook["clientConfig"]["caBundle"] == secret["data"]["ca.crt"]
        assert hook["clientConfig"]["service"] == {"name": FULLNAME, "namespace": NAMESPACE, "path": path,
                                                   "port": 443}
        assert hook["failurePolicy"] == "Fail" and hook["sideEffects"] == "None"
        assert hook["rules"] == [{"apiGroups": ["run.ai"], "apiVersions": ["v1alpha1"], "resources": ["kartas"],
                                  "operations": ["CREATE", "UPDATE"], "scope": "Cluster"}]
    container = server(objs)
    args = container["args"]
    assert args[args.index("--webhook-port") + 1] == "9443"
    assert args[args.index("--webhook-cert") + 1] == "/etc/workload-map-server/webhook-tls/tls.crt"
    assert {"name": "webhook", "containerPort": 9443, "protocol": "TCP"} in container["ports"]
    assert {"name": "webhook", "port": 443, "targetPort": "webhook", "protocol": "TCP"} in \
        one(objs, "Service")["spec"]["ports"]


def test_cert_manager_mode_injects_the_ca(helm: Path) -> None:
    objs = template(helm, release=RELEASE, namespace=NAMESPACE,
                    sets=["webhook.enabled=true", "webhook.certManager.enabled=true", "webhook.failurePolicy=Ignore"])
    assert not by_kind(objs, "Secret")
    cert = one(objs, "Certificate")
    assert cert["spec"]["secretName"] == f"{FULLNAME}-webhook-tls"
    assert cert["spec"]["issuerRef"] == {"kind": "Issuer", "name": f"{FULLNAME}-webhook"}
    assert one(objs, "Issuer")["spec"] == {"selfSigned": {}}
    for kind in WEBHOOK_KINDS:
        config = one(objs, kind)
        assert config["metadata"]["annotations"] == {"cert-manager.io/inject-ca-from": f"{NAMESPACE}/{FULLNAME}-webhook"}
        assert "caBundle" not in config["webhooks"][0]["clientConfig"]
        assert config["webhooks"][0]["failurePolicy"] == "Ignore"
    own = template(helm, sets=["webhook.enabled=true", "webhook.certManager.enabled=true",
                               "webhook.certManager.issuerRef.kind=ClusterIssuer",
                               "webhook.certManager.issuerRef.name=corp-ca"])
    assert not by_kind(own, "Issuer")
    assert one(own, "Certificate")["spec"]["issuerRef"] == {"kind": "ClusterIssuer", "name": "corp-ca"}


@pytest.mark.parametrize("sets", [["webhook.enabled=true"], ["webhook.enabled=true", "webhook.certManager.enabled=true"],
                                  ["kartaStatus.enabled=false"]], ids=["generated-ca", "cert-manager", "no-status"])
def test_lint_strict_with_the_webhook(helm: Path, tmp_path: Path, sets: list[str]) -> None:
    values: dict[str, Any] = {}
    for item in sets:
        key, value = item.split("=")
        node = values
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value == "true"
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    out = run_helm(helm, "lint", "--strict", str(CHART_DIR), "--values", str(path))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "[WARNING]" not in out.stdout and "[ERROR]" not in out.stdout, out.stdout


def test_schema_refuses_an_unknown_failure_policy(helm: Path) -> None:
    out = run_helm(helm, "template", "wmap", str(CHART_DIR), "--set", "webhook.failurePolicy=Sometimes")
    assert out.returncode != 0 and "failurePolicy" in out.stderr
