"""Record the GraphQL and REST answers of the app over the bundled sample (issue 26 acceptance).

The answers of the code before the restructuring of issue 26 (commit 26af59e) are committed
in ``tests/fixtures/sample_answers.json``; ``tests/api/test_sample_answers.py`` asks the
current code the same questions and compares. This module holds the questions, the
in-process app that answers them and the normalization of the volatile values, and is used
by both. It imports only ``workload_map`` (never other test modules), so the old code can
answer through it. To regenerate the fixture from the old code::

    git worktree add --detach /tmp/old-26af59e 26af59e
    PYTHONPATH=/tmp/old-26af59e .venv/bin/python -m tests.api.sample_answers --write
    git worktree remove /tmp/old-26af59e

(run from the repository root: the old tree's root has the ``workload_map -> server`` link,
so ``workload_map`` is the old code; the root of this tree has no ``workload_map``). Without
``PYTHONPATH`` it records the current code's answers, which is how a deliberate change of
an answer is committed (say why in the commit).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "sample_answers.json"
"""Where the recorded answers live (a JSON object: question name -> answer)."""

VOLATILE = {"lastSuccess", "since", "registeredAt"}
"""Keys whose values may be the server's own clock (RFC 3339 times of the run): a value is
replaced by ``"<set>"``, null and "" are kept. ``cluster.lastSuccess`` and ``since`` (time of
the last list/watch contact, of going stale) and ``Definition.registeredAt`` (time a
definition was stored). Over the sample they are null / "" (a snapshot has no list/watch;
catalog entries have no registration time), so today nothing is replaced; the rule is kept so
a run that does register something stays comparable. Nothing else is normalized:
resourceVersions, uids and creation times come from the sample's files, and the server has
no generation counter in these answers."""

READY_WITHIN_S = 600.0
"""Bound on waiting for ``/readyz`` (the whole sample resolved)."""

POD = "name namespace phase ready node reason component instance replicaKey unattributedReason " \
      "resources { gpus cpuMillis memoryBytes byResource { name quantity } }"
GPU = "requestedBySpec requestedByPods allocated unknown byResource { resource requestedBySpec requestedByPods allocated }"
REPLICAS = "desired current ready min max"
RESOURCES = "gpus cpuMillis memoryBytes byResource { name quantity }"
COMPONENT = (f"name kind apiVersion parent logical replicas {{ {REPLICAS} }} resources {{ {RESOURCES} }} "
             f"gpu {{ {GPU} }} nodes errors {{ component field expression message }} "
             f"instances {{ id replicas {{ {REPLICAS} }} podResources {{ {RESOURCES} }} pods {{ name }} }} "
             f"pods {{ name }}")
WORKLOAD = (
    "id name namespace kind group version apiVersion resourceVersion cluster definition origin phase phases "
    "rawPhase createdAt conditions { type status reason message } "
    f"replicas {{ {REPLICAS} }} gpu {{ {GPU} }} resources {{ {RESOURCES} }} "
    f"roles {{ name component instance definition kind parent replicas {{ {REPLICAS} }} nodes "
    f"podResources {{ {RESOURCES} }} gpu {{ {GPU} }} pods {{ name }} instances {{ id }} }} "
    f"components {{ {COMPONENT} children {{ {COMPONENT} children {{ name }} }} }} "
    f"pods {{ {POD} }} unattributedPods {{ name unattributedReason }} "
    "gangGroups { name form minMember key pods subGroups { name minMember } } "
    "errors { component field expression message }")
LLM = 'namespace: "ml-training", group: "jobset.x-k8s.io", kind: "JobSet", name: "llm-pretrain"'

GRAPHQL: dict[str, str] = {
    "workloads-page-1": "{ workloads(first: 7) { totalCount pageInfo { hasNextPage hasPreviousPage startCursor "
                        "endCursor } edges { cursor node { namespace kind name phase } } } }",
    "workloads-running": "{ workloads(phase: RUNNING, first: 500) { totalCount nodes { namespace kind name phases "
                         "gpu { requestedBySpec requestedByPods allocated } } } }",
    "workloads-jobset": '{ workloads(kind: "JobSet", first: 500) { totalCount nodes { namespace name phase } } }',
    "workloads-namespace": '{ workloads(namespace: "ml-training", first: 500) { totalCount nodes { kind name '
                           'phase replicas { desired current ready } } } }',
    "workloads-definition": '{ workloads(definition: "ray-io-raycluster-v1", first: 500) { totalCount nodes '
                            '{ namespace name phase } } }',
    "workload-llm": f"{{ workload({LLM}) {{ {WORKLOAD} }} }}",
    "workload-missing": '{ workload(namespace: "ml-training", group: "jobset.x-k8s.io", kind: "JobSet", '
                        'name: "no-such") { name } }',
    "workload-core-deployment": '{ workload(namespace: "apps", group: "apps", kind: "Deployment", name: '
                                '"triton") { name phase replicas { desired ready } } }',
    "definitions": "{ definitions { name group version kind origin shadowed registeredAt sourceVersion "
                   "components } }",
    "definitions-shadowed": "{ definitions(includeShadowed: true) { name origin shadowed } }",
    "definition-jobset": '{ definition(group: "jobset.x-k8s.io", kind: "JobSet") { name version components '
                         'manifest } }',
    "skipped-definitions": "{ skippedDefinitions { name origin problems { path message } } }",
    "cluster": "{ cluster { name synced stale since error staleKinds lastSuccess } "
               "clusters { name synced stale error staleKinds } }",
    **{f"gpu-summary-{g.lower()}": f"{{ gpuSummary(groupBy: {g}) {{ key workloads gpu {{ {GPU} }} }} }}"
       for g in ("NAMESPACE", "KIND", "NODE", "PHASE", "CLUSTER")},
    "gpu-summary-kind-ml-training": f'{{ gpuSummary(groupBy: KIND, namespace: "ml-training") {{ key workloads '
                                    f'gpu {{ {GPU} }} }} }}',
}
"""Question name -> GraphQL query (pod questions are added from the sample's own pods)."""

PAGE = 50
"""Workloads per page of the every-field question (``workloads-all``, a list of pages: the
default query cost limit refuses every field of all 141 at once)."""

ALL = ("query($after: String) {{ workloads(first: {first}, after: $after) {{ totalCount "
       "pageInfo {{ hasNextPage hasPreviousPage startCursor endCursor }} nodes {{ {fields} }} }} }}")

PODS_PER_ANSWER = 6
"""podWorkload / REST pod questions: the first pods (by namespace, name) of this many workloads."""

WL = "/api/v1/namespaces/ml-training/workloads/jobset.x-k8s.io/JobSet/llm-pretrain"
REST: dict[str, str] = {
    "rest-workloads-full": "/api/v1/workloads?view=full&limit=50",
    "rest-workloads-summary": "/api/v1/workloads?limit=500",
    "rest-workloads-page": "/api/v1/workloads?limit=5",
    "rest-workloads-ml-training": "/api/v1/namespaces/ml-training/workloads?limit=500",
    "rest-workloads-jobset": "/api/v1/workloads?kind=JobSet&limit=500",
    "rest-workloads-running": "/api/v1/workloads?phase=Running&limit=500",
    "rest-workloads-group": "/api/v1/workloads?group=ray.io&limit=500",
    "rest-workload-llm": WL,
    "rest-phase-llm": WL + "/phase",
    "rest-phase-wait-met": WL + "/phase?wait=Running&timeout=1s",
    "rest-workload-missing": "/api/v1/namespaces/ml-training/workloads/jobset.x-k8s.io/JobSet/no-such",
    "rest-definitions": "/api/v1/definitions",
    "rest-definition-jobset": "/api/v1/definitions/jobset-x-k8s-io-jobset-v1alpha2",
    "rest-definition-missing": "/api/v1/definitions/no-such",
    "rest-workload-types": "/api/v1/workload-types",
    "rest-bad-view": "/api/v1/workloads?view=wide",
}
"""Question name -> REST path (GET; the answer recorded is the status and the JSON body)."""


def normalize(value: Any) -> Any:
    """``value`` with every :data:`VOLATILE` key's value replaced by ``"<set>"`` (null and "" kept)."""
    if isinstance(value, dict):
        return {k: (v if v in (None, "") else "<set>") if k in VOLATILE else normalize(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalize(v) for v in value]
    return value


def dumps(answers: dict[str, Any]) -> str:
    """The fixture's text: one line per question, sorted (small, and a diff names the question)."""
    lines = [f"{json.dumps(k)}: {json.dumps(v, sort_keys=True, separators=(',', ':'))}" for k, v in sorted(answers.items())]
    return "{\n" + ",\n".join(lines) + "\n}\n"


async def _wait_ready(client: httpx.AsyncClient) -> None:
    deadline = time.monotonic() + READY_WITHIN_S
    while (await client.get("/readyz")).status_code != 200:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the sample was not resolved within {READY_WITHIN_S:g} s")
        await asyncio.sleep(0.2)


async def _ask(client: httpx.AsyncClient) -> dict[str, Any]:
    answers: dict[str, Any] = {"workloads-all": await _every_page(client)}
    for name, query in GRAPHQL.items():
        answers[name] = (await client.post("/graphql", json={"query": query})).json()
    for name, path in REST.items():
        response = await client.get(path)
        answers[name] = {"status": response.status_code, "body": response.json()}
    for ns, pod in _pods(answers["workloads-all"]):
        answers[f"pod-workload-{ns}-{pod}"] = (await client.post("/graphql", json={"query": (
            f'{{ podWorkload(namespace: "{ns}", name: "{pod}") {{ namespace name phase node component '
            "instance replicaKey workload { namespace kind name phase } "
            "gangGroups { gang { name form minMember pods } subGroup { name minMember } } } }")})).json()
        response = await client.get(f"/api/v1/namespaces/{ns}/pods/{pod}/workload")
        answers[f"rest-pod-workload-{ns}-{pod}"] = {"status": response.status_code, "body": response.json()}
    return {name: normalize(answer) for name, answer in answers.items()}


async def _every_page(client: httpx.AsyncClient) -> list[Any]:
    """Every field of every workload, page by page (at most 100 pages)."""
    pages: list[Any] = []
    after = None
    for _ in range(100):
        query = ALL.format(first=PAGE, fields=WORKLOAD)
        pages.append((await client.post("/graphql", json={"query": query, "variables": {"after": after}})).json())
        info = (pages[-1].get("data") or {}).get("workloads", {}).get("pageInfo", {})
        if not info.get("hasNextPage"):
            break
        after = info["endCursor"]
    return pages


def _pods(pages: list[Any]) -> list[tuple[str, str]]:
    """(namespace, name) of the first pod of some workloads that have pods, plus one unknown pod."""
    nodes = [w for page in pages for w in page["data"]["workloads"]["nodes"]]
    firsts = sorted((p["namespace"], p["name"]) for w in nodes for p in w["pods"][:1])
    step = max(1, len(firsts) // PODS_PER_ANSWER)
    return firsts[::step][:PODS_PER_ANSWER] + [("ml-training", "no-such-pod")]


async def record() -> dict[str, Any]:
    """Every question's normalized answer from an app over the bundled sample, in process.

    The app gets one resolver worker with a generous budget (a loaded machine must not turn
    a resolution into a timeout view) and a private state directory (no registrations).

    Raises:
        RuntimeError: the sample was not resolved within :data:`READY_WITHIN_S`.
    """
    from workload_map.app import create_app
    from workload_map.config import ResolverSettings, Settings
    from workload_map.kube.snapshot import SnapshotReader

    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(state_dir=Path(tmp) / "state",
                            resolver=ResolverSettings(workers=1, timeout_s=120.0, quarantine_after=1000))
        app = create_app(settings, reader=SnapshotReader.from_paths(settings.sample_dir))
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
                await _wait_ready(client)
                return await _ask(client)


def main(argv: list[str] | None = None) -> int:
    """``python -m tests.api.sample_answers [--write | --out FILE]``: record and save the answers."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write {FIXTURE.name} in tests/fixtures")
    parser.add_argument("--out", type=Path, help="write to this file instead")
    args = parser.parse_args(argv)
    import workload_map

    print(f"answering with {workload_map.__file__}", file=sys.stderr)
    text = dumps(asyncio.run(record()))
    target = args.out or (FIXTURE if args.write else None)
    if target is None:
        sys.stdout.write(text)
    else:
        target.write_text(text)
        print(f"wrote {target} ({len(text):,} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
