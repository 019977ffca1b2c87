"""Unit tests of the control-plane support code that need no binaries."""

from __future__ import annotations

import re
import ssl
from pathlib import Path

import pytest
from cryptography import x509

from . import binaries, crds
from .pki import make_pki
from .procs import free_ports

HERE = Path(__file__).resolve().parent


def test_build_sh_versions_match_python() -> None:
    text = (HERE / "build.sh").read_text()
    got = dict(re.findall(r"^(PINNED_KUBE|PINNED_ETCD|FALLBACK_KUBE|FALLBACK_ETCD)=(\S+)$", text, re.M))
    assert (got["PINNED_KUBE"], got["PINNED_ETCD"]) == binaries.PINNED
    assert (got["FALLBACK_KUBE"], got["FALLBACK_ETCD"]) == binaries.FALLBACK


def test_cache_root_honours_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert binaries.cache_root() == tmp_path / "workload-map-server" / "kube-test-bin"


def test_find_binaries_env_and_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("TEST_ASSET_KUBE_APISERVER", "TEST_ASSET_ETCD", "KUBEBUILDER_ASSETS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "empty"))
    assert binaries.find_binaries() is None
    fake = tmp_path / "bin"
    fake.mkdir()
    for name in ("kube-apiserver", "etcd"):
        (fake / name).write_text("#!/bin/sh\necho fake\n")
        (fake / name).chmod(0o755)
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(fake))
    assert binaries.find_binaries().source == "KUBEBUILDER_ASSETS"
    monkeypatch.delenv("KUBEBUILDER_ASSETS")
    fallback = binaries.cache_root() / "{}-etcd-{}".format(*binaries.FALLBACK)
    fallback.mkdir(parents=True)
    for name in ("kube-apiserver", "etcd"):
        (fallback / name).symlink_to(fake / name)
    assert binaries.find_binaries().source == f"cache {fallback.name}"


def test_own_crds_shape() -> None:
    manifests = crds.own_crds()
    names = [m["metadata"]["name"] for m in manifests]
    assert len(names) == len(set(names)) == len(crds.OWN_CRDS) == 31
    karta = next(m for m in manifests if m["metadata"]["name"] == "kartas.run.ai")
    assert karta["spec"]["scope"] == "Cluster"
    assert karta["spec"]["names"]["shortNames"] == ["krt"]
    for m in manifests:
        (v,) = m["spec"]["versions"]
        assert v["served"] and v["storage"] and v["subresources"] == {"status": {}}
        assert v["schema"]["openAPIV3Schema"]["x-kubernetes-preserve-unknown-fields"] is True


def test_prepare_shared_keeps_only_storage_version() -> None:
    src = {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "xs.example.com", "creationTimestamp": None},
        "spec": {"group": "example.com", "conversion": {"strategy": "Webhook"}, "versions": [
            {"name": "v1alpha1", "served": True, "storage": False},
            {"name": "v1", "served": False, "storage": True}]},
        "status": {"acceptedNames": {}},
    }
    out = crds.prepare_shared(src)
    assert [v["name"] for v in out["spec"]["versions"]] == ["v1"]
    assert out["spec"]["versions"][0]["served"] is True
    assert "conversion" not in out["spec"] and "status" not in out
    assert "creationTimestamp" not in out["metadata"]
    assert len(src["spec"]["versions"]) == 2  # input untouched
    with pytest.raises(ValueError):
        crds.prepare_shared({"kind": "ConfigMap"})


def test_merged_crds_prefers_shared(tmp_path: Path) -> None:
    shared = crds.minimal_crd(crds.OWN_CRDS[0])
    shared["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = {"type": "object"}
    import yaml

    (tmp_path / "x.yaml").write_text(yaml.safe_dump(shared))
    merged = crds.merged_crds(tmp_path)
    assert len(merged) == len(crds.OWN_CRDS)
    assert merged[0]["metadata"]["labels"]["wmap.test/crd-source"] == "shared"
    assert crds.merged_crds(tmp_path / "absent") == crds.own_crds()


def test_shared_dir_env_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("WMAP_SHARED_DIR", str(tmp_path))
    assert crds.shared_crds_dir() == tmp_path / "crds"


def test_pki(tmp_path: Path) -> None:
    pki = make_pki(tmp_path, {"alice": ("team-a",)})
    cert = x509.load_pem_x509_certificate(pki.clients["alice"].cert.read_bytes())
    assert cert.subject.rfc4514_string() == "CN=alice,O=team-a"
    serving = x509.load_pem_x509_certificate(pki.serving.cert.read_bytes())
    san = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "localhost" in san.get_values_for_type(x509.DNSName)
    ctx = ssl.create_default_context(cafile=str(pki.ca.cert))
    ctx.load_cert_chain(str(pki.clients["alice"].cert), str(pki.clients["alice"].key))


def test_free_ports_distinct() -> None:
    ports = free_ports(3)
    assert len(set(ports)) == 3
