"""Serve settings from flags and WMAP_* variables; the loopback warning; the documented answers."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest

from workload_map.app import create_app, warn_if_exposed
from workload_map.cli.main import parser
from workload_map.cli.live import serve_settings
from workload_map.config import AuthSettings, HttpSettings, Settings
from workload_map.errors import InvalidRequest
from workload_map.kube.snapshot import SnapshotReader
from tests.api.conftest import JOBSET


def test_flags_override_the_environment_which_overrides_defaults() -> None:
    env = {"WMAP_AUTH": "kubernetes", "WMAP_IMPERSONATE": "false", "WMAP_PORT": "9000",
           "WMAP_NAMESPACES": "a, b", "WMAP_METRICS_PUBLIC": "0", "WMAP_GPU_RESOURCES": "x.com/gpu"}
    settings = serve_settings(parser().parse_args(["serve"]), env)
    assert (settings.auth.mode, settings.auth.impersonate, settings.http.port) == ("kubernetes", False, 9000)
    assert settings.kube.namespaces == ("a", "b") and not settings.metrics_public
    assert settings.gpu_resources == ("x.com/gpu",)
    flagged = serve_settings(parser().parse_args(["serve", "--auth", "none", "--impersonate", "--port", "1",
                                                  "--namespace", "c"]), env)
    assert (flagged.auth.mode, flagged.auth.impersonate, flagged.http.port) == ("none", True, 1)
    assert flagged.kube.namespaces == ("c",)
    defaults = serve_settings(parser().parse_args(["serve"]), {})
    assert (defaults.auth.mode, defaults.auth.impersonate, defaults.http.host) == ("none", True, "127.0.0.1")
    with pytest.raises(InvalidRequest, match="WMAP_PORT"):
        serve_settings(parser().parse_args(["serve"]), {"WMAP_PORT": "eighty"})
    with pytest.raises(InvalidRequest, match="WMAP_AUTH"):
        serve_settings(parser().parse_args(["serve"]), {"WMAP_AUTH": "oidc"})


def test_auth_none_beyond_loopback_is_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="workload_map.app"):
        assert not warn_if_exposed(Settings(http=HttpSettings(host="127.0.0.1")))
        assert not warn_if_exposed(Settings(http=HttpSettings(host="0.0.0.0"), auth=AuthSettings(mode="kubernetes")))
        assert warn_if_exposed(Settings(http=HttpSettings(host="0.0.0.0")))
    assert "authentication is off" in caplog.text and "0.0.0.0" in caplog.text


def test_bad_auth_configuration_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="auth mode"):
        create_app(Settings(state_dir=tmp_path, auth=AuthSettings(mode="oidc")))
    with pytest.raises(ValueError, match="needs an access policy"):
        create_app(Settings(state_dir=tmp_path, auth=AuthSettings(mode="kubernetes")),
                   reader=SnapshotReader.from_paths(JOBSET))


async def test_openapi_documents_401_403_413_and_504(tmp_path: Path) -> None:
    app = create_app(Settings(state_dir=tmp_path), reader=SnapshotReader.from_paths(JOBSET))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        doc = (await client.get("/openapi.json")).json()
    paths = doc["paths"]
    assert "401" in paths["/api/v1/workloads"]["get"]["responses"]
    assert paths["/api/v1/workloads"]["get"]["security"] == [{"bearer": []}]
    assert "403" in paths["/api/v1/definitions"]["post"]["responses"]
    assert "413" in paths["/api/v1/definitions"]["post"]["responses"]
    assert "401" not in paths["/livez"]["get"]["responses"] and "504" in paths["/livez"]["get"]["responses"]
    assert doc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
