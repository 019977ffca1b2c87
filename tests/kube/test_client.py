"""Client configuration (kubectl precedence, in-cluster tokens) and the raw JSON transport."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from aiohttp import web

from workload_map.gvk import GVK
from workload_map.kube.api import KubeApi, ResourceClient
from workload_map.kube.client import ClusterConfigError, connect, find_config_source, has_cluster_config
from workload_map.kube.errors import KubeApiError

from .httpfake import FakeHttpServer, self_signed

POD = GVK("", "v1", "Pod")
pytestmark = pytest.mark.timeout(30)


def kubeconfig(path: Path, server: str, token: str = "t0", *, ca: Path | None = None, context: str = "main") -> Path:
    cluster = {"server": server} | ({"certificate-authority": str(ca)} if ca else {})
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": context,
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "u", "user": {"token": token}}, {"name": "other", "user": {"token": "other-token"}}],
        "contexts": [{"name": "main", "context": {"cluster": "c", "user": "u"}},
                     {"name": "second", "context": {"cluster": "c", "user": "other"}}],
    }))
    return path


def sa_dir(tmp_path: Path, token: str = "sa-token-1") -> Path:
    directory = tmp_path / "sa"
    directory.mkdir(exist_ok=True)
    (directory / "token").write_text(token)
    (directory / "ca.crt").write_text("placeholder")
    return directory


def test_precedence_explicit_then_env_then_home_then_in_cluster(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    home_cfg = kubeconfig(home / ".kube" / "config", "http://127.0.0.1:1")
    env_cfg = kubeconfig(tmp_path / "env.yaml", "http://127.0.0.1:2")
    sa = sa_dir(tmp_path)
    env = {"HOME": str(home), "KUBECONFIG": f"{tmp_path}/missing.yaml:{env_cfg}",
           "KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    source = find_config_source("/explicit/path", context="x", environ=env, sa_dir=sa)
    assert (source.kind, source.path, source.context) == ("kubeconfig", "/explicit/path", "x")
    assert not has_cluster_config("/explicit/path", environ=env, sa_dir=sa), "explicit file missing"
    assert find_config_source(environ=env, sa_dir=sa).path == env["KUBECONFIG"]
    env_missing = env | {"KUBECONFIG": str(tmp_path / "none.yaml")}
    source = find_config_source(environ=env_missing, sa_dir=sa)
    assert source.kind == "in-cluster" and source.host == "https://10.0.0.1:443", "$KUBECONFIG set: home ignored"
    del env["KUBECONFIG"]
    assert find_config_source(environ=env, sa_dir=sa).path == str(home_cfg)
    home_cfg.unlink()
    assert find_config_source(environ=env, sa_dir=sa).kind == "in-cluster"
    assert find_config_source(environ={"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "6443"},
                              sa_dir=sa).host == "https://[fd00::1]:6443"
    assert not has_cluster_config(environ={"HOME": str(home)}, sa_dir=sa)
    assert not has_cluster_config(environ=env, sa_dir=tmp_path / "nothing")
    assert has_cluster_config(environ=env, sa_dir=sa)


async def test_connect_without_config_or_with_a_broken_one(tmp_path: Path) -> None:
    with pytest.raises(ClusterConfigError, match="no kubeconfig"):
        await connect(environ={}, sa_dir=tmp_path)
    with pytest.raises(ClusterConfigError, match="not found"):
        await connect(str(tmp_path / "nope"), environ={})
    (tmp_path / "bad").write_text("apiVersion: v1\nkind: Config\n")
    with pytest.raises(ClusterConfigError, match="invalid"):
        await connect(str(tmp_path / "bad"), environ={})


def auth_json(expected: list[str], body: dict) -> object:
    async def handler(request: web.Request) -> web.StreamResponse:
        if request.headers.get("Authorization") != f"Bearer {expected[0]}":
            return web.json_response({"kind": "Status", "code": 401, "reason": "Unauthorized"}, status=401)
        return web.json_response(body)
    return handler


async def test_kubeconfig_context_and_bearer_token(tmp_path: Path) -> None:
    expected = ["other-token"]
    routes = {"/api/v1/pods": auth_json(expected, {"kind": "PodList", "metadata": {"resourceVersion": "5"},
                                                   "items": []})}
    async with FakeHttpServer(routes) as server:  # type: ignore[arg-type]
        path = kubeconfig(tmp_path / "cfg", server.url)
        async with await connect(str(path), context="second", environ={}) as client:
            page = await ResourceClient(KubeApi(client), POD, "pods").list_page(limit=500, continue_token=None)
            assert page["metadata"]["resourceVersion"] == "5"
            query = server.requests[-1].query
            assert query["limit"] == "500" and "continue" not in query
            assert client.host == server.url and "second" in str(client.source)


async def test_in_cluster_token_rotation_is_picked_up_on_401(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    expected = ["sa-token-1"]
    routes = {"/api/v1/namespaces/ns/pods": auth_json(expected, {"metadata": {"resourceVersion": "9"}, "items": []})}
    async with FakeHttpServer(routes, tls=(cert, key)) as server:  # type: ignore[arg-type]
        sa = sa_dir(tmp_path)
        (sa / "ca.crt").write_bytes(cert.read_bytes())
        port = server.url.rsplit(":", 1)[1]
        env = {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": port}
        async with await connect(environ=env, sa_dir=sa) as client:
            assert client.source.kind == "in-cluster"
            resources = ResourceClient(KubeApi(client), POD, "pods", "ns")
            assert (await resources.list_page(limit=1, continue_token=None))["metadata"]["resourceVersion"] == "9"
            expected[0] = "sa-token-2"  # the kubelet rotated the bound token
            (sa / "token").write_text("sa-token-2\n")
            await resources.list_page(limit=1, continue_token="abc")
            assert client.credential_refreshes == 1
            assert [r.headers["Authorization"] for r in server.requests] == [
                "Bearer sa-token-1", "Bearer sa-token-1", "Bearer sa-token-2"]
            expected[0] = "revoked"
            with pytest.raises(KubeApiError) as info:
                await resources.list_page(limit=1, continue_token=None)
            assert info.value.status == 401 and client.credential_refreshes == 2, "one retry only"


async def test_error_statuses_are_decoded(tmp_path: Path) -> None:
    async def forbidden(request: web.Request) -> web.StreamResponse:
        return web.json_response({"kind": "Status", "code": 403, "reason": "Forbidden",
                                  "message": 'pods is forbidden: User "alice"'}, status=403)

    async def throttled(request: web.Request) -> web.StreamResponse:
        return web.Response(status=429, text="slow down", headers={"Retry-After": "3"})

    routes = {"/api/v1/pods": forbidden, "/api/v1/nodes": throttled}
    async with FakeHttpServer(routes) as server:  # type: ignore[arg-type]
        async with await connect(str(kubeconfig(tmp_path / "cfg", server.url)), environ={}) as client:
            api = KubeApi(client)
            with pytest.raises(KubeApiError) as info:
                await api.get_json("/api/v1/pods")
            assert info.value.is_forbidden and "alice" in info.value.message
            with pytest.raises(KubeApiError) as info:
                await api.get_json("/apis/example.com/v1")
            assert info.value.is_not_found
            with pytest.raises(KubeApiError) as info:
                await api.get_json("/api/v1/nodes")
            assert (info.value.status, info.value.message, info.value.retry_after) == (429, "slow down", 3.0)
    async with await connect(str(kubeconfig(tmp_path / "cfg2", server.url)), environ={}) as client:
        with pytest.raises(KubeApiError) as info:
            await KubeApi(client).get_json("/api/v1/pods")
        assert info.value.status == 0, "connection refused once the server is gone"


async def test_watch_stream_splits_lines_across_chunks_and_sends_watch_params(tmp_path: Path) -> None:
    big = "x" * (3 * 2**20)  # larger than aiohttp's 2 MiB line buffer
    events = [
        {"type": "ADDED", "object": {"metadata": {"name": "a", "resourceVersion": "11"}, "data": big}},
        {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "12"}}},
    ]

    async def watch(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        payload = b"".join(json.dumps(e).encode() + b"\n" for e in events)
        for start in range(0, len(payload), 65_521):  # chunk boundaries inside lines
            await response.write(payload[start:start + 65_521])
        await asyncio.sleep(0.05)
        await response.write_eof()
        return response

    async with FakeHttpServer({"/api/v1/pods": watch}) as server:  # type: ignore[arg-type]
        async with await connect(str(kubeconfig(tmp_path / "cfg", server.url)), environ={}) as client:
            resources = ResourceClient(KubeApi(client), POD, "pods")
            async with resources.watch(resource_version="10", timeout_seconds=321, read_timeout=5) as stream:
                received = [event async for event in stream]
            assert [e["type"] for e in received] == ["ADDED", "BOOKMARK"]
            assert len(received[0]["object"]["data"]) == len(big)
            assert dict(server.requests[-1].query) == {"watch": "true", "resourceVersion": "10",
                                                       "allowWatchBookmarks": "true", "timeoutSeconds": "321"}
