"""kubectl's connection flags over a kubeconfig (configuration only: nothing is contacted)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from workload_map.kube.client import ClusterConfigError
from workload_map.kube.overrides import ConnectionFlags, connect_with


@pytest.fixture
def kubeconfig(tmp_path: Path) -> str:
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "east",
        "clusters": [{"name": "east", "cluster": {"server": "https://east.example:6443"}},
                     {"name": "west", "cluster": {"server": "https://west.example:6443"}}],
        "users": [{"name": "alice", "user": {"token": "alice-token"}},
                  {"name": "bob", "user": {"token": "bob-token"}}],
        "contexts": [{"name": "east", "context": {"cluster": "east", "user": "alice"}}]}))
    return str(path)


async def test_cluster_and_user_pick_other_entries(kubeconfig: str) -> None:
    client = await connect_with(kubeconfig, None, ConnectionFlags(cluster="west", user="bob"))
    assert client.host == "https://west.example:6443"
    assert client.configuration.api_key["BearerToken"] == "Bearer bob-token"
    await client.close()


async def test_server_token_and_tls_flags_replace_values(kubeconfig: str, tmp_path: Path) -> None:
    ca = tmp_path / "ca.crt"
    flags = ConnectionFlags(server="https://10.0.0.1:6443/", token="t0k", insecure_skip_tls_verify=True,
                            certificate_authority=str(ca))
    client = await connect_with(kubeconfig, None, flags)
    c = client.configuration
    assert (client.host, c.api_key["BearerToken"], c.verify_ssl, c.ssl_ca_cert) == (
        "https://10.0.0.1:6443", "Bearer t0k", False, str(ca))
    await client.close()


async def test_server_without_kubeconfig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    client = await connect_with(None, None, ConnectionFlags(server="https://127.0.0.1:6443", token="x"))
    assert client.host == "https://127.0.0.1:6443"
    await client.close()
    with pytest.raises(ClusterConfigError, match="give --server"):
        await connect_with(None, None, ConnectionFlags(token="x"))


async def test_unknown_names_are_errors(kubeconfig: str) -> None:
    with pytest.raises(ClusterConfigError, match="cluster 'north' not found"):
        await connect_with(kubeconfig, None, ConnectionFlags(cluster="north"))
    with pytest.raises(ClusterConfigError, match="context 'south' not found"):
        await connect_with(kubeconfig, "south", ConnectionFlags(user="bob"))
