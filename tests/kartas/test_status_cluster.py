"""Karta status on the real control plane: conditions, observedGeneration, workload count, one writer.

The server runs in the test's loop over the session control plane (admin kubeconfig). Each test
uses a fresh API group for its Widget kind (so "CRD installed later" is real) and its own Lease
namespace (so servers of other tests never compete for it). Kartas are deleted at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from pathlib import Path
from typing import Any

import pytest

from tests.api.test_mutations import broken, jobset_definition
from tests.kartas.support import (KARTAS, conditions, karta_when, patch_karta, poll, widget_crd, widget_karta,
                                  widget_kind, wmap_server)

pytestmark = pytest.mark.cluster


def ready_status(karta: dict[str, Any]) -> str | None:
    return conditions(karta).get("Ready", {}).get("status")


async def test_status_follows_validation_crd_and_generation(k8s_control_plane: Any, namespace: str,
                                                            tmp_path: Path) -> None:
    cp = k8s_control_plane
    group, _ = widget_kind()
    good, bad = f"widget-{secrets.token_hex(3)}", f"broken-{secrets.token_hex(3)}"
    async with cp.async_client() as kube, wmap_server(cp, tmp_path, namespace):
        try:
            assert (await kube.post(KARTAS, json=widget_karta(good, group))).status_code == 201
            assert (await kube.post(KARTAS, json=broken(jobset_definition(bad)))).status_code == 201

            # 1. valid, but the Widget CRD is not installed: Validated True, CRDExists False, Ready False
            karta = await karta_when(kube, good, lambda k: "CRDExists" in conditions(k))
            conds = conditions(karta)
            assert (conds["Validated"]["status"], conds["Validated"]["reason"]) == ("True", "ValidationSucceeded")
            assert (conds["CRDExists"]["status"], conds["CRDExists"]["reason"]) == ("False", "CRDNotFound")
            assert conds["CRDExists"]["message"] == f"CRD for {group}/Widget not found or does not serve version v1"
            assert (conds["Ready"]["status"], conds["Ready"]["reason"]) == ("False", "NotReady")
            assert karta["status"]["observedGeneration"] == karta["metadata"]["generation"] == 1
            assert {c["observedGeneration"] for c in conds.values()} == {1}
            assert karta["status"]["workloads"] == 0

            # 2. the broken JobSet Karta: ValidationFailed naming both bad fields; JobSet is served
            bad_karta = await karta_when(kube, bad, lambda k: "Validated" in conditions(k))
            failed = conditions(bad_karta)
            assert (failed["Validated"]["status"], failed["Validated"]["reason"]) == ("False", "ValidationFailed")
            assert "spec.structureDefinition.childComponents[0].ownerRef" in failed["Validated"]["message"]
            assert "spec.structureDefinition.childComponents[0].instanceIdPath" in failed["Validated"]["message"]
            assert failed["CRDExists"]["status"] == "True" and failed["Ready"]["status"] == "False"

            # 3. the CRD is installed later: CRDExists and Ready flip to True
            await asyncio.to_thread(cp.create_crd, widget_crd(group))  # blocking client: off the server's loop
            karta = await karta_when(kube, good, lambda k: ready_status(k) == "True")
            assert conditions(karta)["CRDExists"]["reason"] == "CRDFound"
            assert conditions(karta)["Validated"]["lastTransitionTime"] == conds["Validated"]["lastTransitionTime"]

            # 4. two Widgets in the namespace: the Karta covers two workloads
            for name in ("w1", "w2"):
                r = await kube.post(f"/apis/{group}/v1/namespaces/{namespace}/widgets",
                                    json={"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": name}})
                assert r.status_code == 201, r.text
            karta = await karta_when(kube, good, lambda k: k["status"].get("workloads") == 2)
            assert karta["status"]["lastResolvedTime"].endswith("Z")

            # 5. a spec change bumps the generation: every observedGeneration follows
            r = await patch_karta(kube, good, {"spec": {"structureDefinition": {"rootComponent": {
                "statusDefinition": {"statusMappings": {"running": [{"byPhase": "Active"}]}}}}}})
            assert r.status_code == 200, r.text
            assert r.json()["metadata"]["generation"] == 2
            karta = await karta_when(kube, good, lambda k: k["status"].get("observedGeneration") == 2)
            assert {c["observedGeneration"] for c in conditions(karta).values()} == {2}
            assert ready_status(karta) == "True" and karta["status"]["workloads"] == 2
        finally:
            for name in (good, bad):
                await kube.delete(f"{KARTAS}/{name}")


async def test_two_servers_one_writer_and_failover(k8s_control_plane: Any, namespace: str, tmp_path: Path) -> None:
    cp = k8s_control_plane
    group, _ = widget_kind()
    name = f"widget-{secrets.token_hex(3)}"
    cp.create_crd(widget_crd(group))
    stacks = [contextlib.AsyncExitStack(), contextlib.AsyncExitStack()]
    async with cp.async_client() as kube:
        try:
            apps = [(await stack.enter_async_context(wmap_server(cp, tmp_path / str(i), namespace)))[0]
                    for i, stack in enumerate(stacks)]
            controllers = [app.state.runtime.karta_status for app in apps]

            async def one_leader() -> bool:
                return sum(c.is_leader() for c in controllers) == 1

            await poll(one_leader, 30)
            lease_path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/workload-map-server-karta-status"
            transitions = (await kube.get(lease_path)).json()["spec"].get("leaseTransitions", 0)
            assert (await kube.post(KARTAS, json=widget_karta(name, group))).status_code == 201
            await karta_when(kube, name, lambda k: ready_status(k) == "True")
            # one writer, the Lease holder when the status was due; the other only read. Which one
            # holds the Lease now is asked apart: on a loaded machine (the whole suite beside a
            # kube-apiserver) a late renewal can hand it over after the write, and the new holder
            # then finds the status written already (seen once in a full run)
            assert sorted(c.writes > 0 for c in controllers) == [False, True]
            lead = next(i for i, c in enumerate(controllers) if c.writes)
            leader, follower = controllers[lead], controllers[1 - lead]
            assert await one_leader()
            lease = (await kube.get(lease_path)).json()
            assert lease["spec"]["holderIdentity"] == next(c for c in controllers if c.is_leader()).elector.identity
            if lease["spec"].get("leaseTransitions", 0) == transitions:  # held throughout: by the writer
                assert leader.is_leader()

            # the leader stops (releasing the Lease): the follower takes over and follows a generation bump
            await stacks[lead].aclose()
            await poll(lambda: _true(follower.is_leader()), 30)
            r = await patch_karta(kube, name, {"spec": {"structureDefinition": {"rootComponent": {"name": "gadget"}}}})
            assert r.status_code == 200 and r.json()["metadata"]["generation"] == 2, r.text
            await karta_when(kube, name, lambda k: k["status"].get("observedGeneration") == 2)
            assert follower.writes >= 1
        finally:
            for stack in stacks:
                await stack.aclose()
            await kube.delete(f"{KARTAS}/{name}")


async def _true(value: bool) -> bool:
    return value
