"""Per-client bound on held ``?wait=`` requests (issue 29 item 2)."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from starlette.applications import Starlette

from workload_map.api.waits import ClientWaits, TooManyWaits

PHASE = "/api/v1/namespaces/ml/workloads/jobset.x-k8s.io/JobSet/train/phase"


def test_each_client_holds_at_most_its_share() -> None:
    waits = ClientWaits(2)
    with waits.hold("10.0.0.1"), waits.hold("10.0.0.1"):
        with pytest.raises(TooManyWaits, match="already holds 2 [?]wait= requests"):
            with waits.hold("10.0.0.1"):
                pass
        with waits.hold("10.0.0.2"):  # another address has its own share
            assert waits.held == {"10.0.0.1": 2, "10.0.0.2": 1}
    assert waits.held == {}  # released when the waits end


async def test_one_wait_too_many_is_a_429_at_once(app: Starlette, client: httpx.AsyncClient) -> None:
    app.state.runtime.waits = ClientWaits(1)
    held = asyncio.create_task(client.get(PHASE, params={"wait": "Failed", "timeout": "20s"}))
    deadline = asyncio.get_running_loop().time() + 10
    while not app.state.runtime.waits.held and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.01)
    refused = await client.get(PHASE, params={"wait": "Failed", "timeout": "20s"})
    assert (refused.status_code, refused.headers["retry-after"], refused.json()["error"]) == (429, "5", "too_many_waits")
    assert (await client.get(PHASE)).status_code == 200  # a plain read is not a wait
    held.cancel()
