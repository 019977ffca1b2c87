"""Status rules of the issue-14 catalog types are mutually exclusive over grids of status values.

Each definition below derives its phase by one decision ladder; the grids check that every
combination the operator can write (and some it should not) gives exactly one status, never
``Undefined`` and never a runtime jq failure.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from tests.catalog.test_exclusive_status import cond, exactly_one

TRI = (None, "True", "False")


@pytest.mark.parametrize("slug", ["kubeflow-org-tfjob-v1", "kubeflow-org-xgboostjob-v1",
                                  "kubeflow-org-paddlejob-v1", "kubeflow-org-jaxjob-v1"])
def test_training_operator_jobs(slug: str) -> None:
    kinds = ("Created", "Running", "Restarting", "Succeeded", "Failed", "Suspended")
    objs = [{"spec": {"runPolicy": {"suspend": suspend}},
             "status": {"conditions": [c for kind, st in zip(kinds, statuses) for c in cond(kind, st)]}}
            for suspend in (False, True) for statuses in itertools.product(TRI, repeat=len(kinds))]
    exactly_one(slug, objs)


def test_trainjob() -> None:
    kinds = ("Created", "Suspended", "Complete", "Failed")
    objs: list[dict[str, Any]] = []
    for suspend, ready in itertools.product((None, False, True), (None, 0, 1)):
        for statuses in itertools.product(TRI, repeat=len(kinds)):
            status: dict[str, Any] = {"conditions": [c for k, st in zip(kinds, statuses) for c in cond(k, st)]}
            if ready is not None:
                status["jobsStatus"] = [{"name": "node", "ready": ready, "active": 1}]
            objs.append({"spec": {} if suspend is None else {"suspend": suspend}, "status": status})
    exactly_one("trainer-kubeflow-org-trainjob-v1alpha1", objs)


def test_volcano_job() -> None:
    phases = (None, "Pending", "Aborting", "Aborted", "Running", "Restarting", "Completing", "Completed",
              "Terminating", "Terminated", "Failed")
    exactly_one("batch-volcano-sh-job-v1alpha1",
                [{"status": {} if p is None else {"state": {"phase": p}}} for p in phases])


def test_spark_application() -> None:
    states = (None, "", "NEW", "SUBMITTED", "RUNNING", "COMPLETED", "FAILED", "SUBMISSION_FAILED", "PENDING_RERUN",
              "INVALIDATING", "SUCCEEDING", "FAILING", "UNKNOWN", "SUSPENDING", "SUSPENDED", "RESUMING")
    exactly_one("sparkoperator-k8s-io-sparkapplication-v1beta2",
                [{"spec": {} if s is None else {"suspend": s},
                  "status": {} if st is None else {"applicationState": {"state": st}}}
                 for s, st in itertools.product((None, False, True), states)])


def test_scheduled_spark_application() -> None:
    objs = [{"spec": {"suspend": s}, "status": {k: v for k, v in (
        ("scheduleState", st), ("lastRunName", last), ("pastFailedRunNames", failed)) if v is not None}}
        for s, st, last, failed in itertools.product((False, True), (None, "", "New", "Validating", "Scheduled",
                                                                      "FailedValidation"),
                                                     (None, "a-1"), (None, [], ["a-1"], ["a-0"]))]
    exactly_one("sparkoperator-k8s-io-scheduledsparkapplication-v1beta2", objs)


def test_argo_workflow() -> None:
    exactly_one("argoproj-io-workflow-v1alpha1",
                [{"spec": {} if s is None else {"suspend": s}, "status": {} if p is None else {"phase": p}}
                 for s, p in itertools.product((None, False, True),
                                               (None, "", "Pending", "Running", "Succeeded", "Failed", "Error"))])


def test_appwrapper() -> None:
    phases = (None, "", "Suspended", "Resuming", "Running", "Resetting", "Suspending", "Succeeded", "Failed",
              "Terminating")
    exactly_one("workload-codeflare-dev-appwrapper-v1beta2",
                [{"status": {**({} if p is None else {"phase": p}), "conditions": cond("Unhealthy", u)}}
                 for p, u in itertools.product(phases, TRI)])


@pytest.mark.parametrize("slug", ["serving-kserve-io-llminferenceservice-v1alpha2",
                                  "serving-kserve-io-llminferenceservice-v1alpha1"])
def test_llminferenceservice(slug: str) -> None:
    objs = [{"status": {"conditions": cond("Ready", st, reason) if st else []}}
            for st, reason in itertools.product((None, "True", "False", "Unknown"),
                                                ("Progressing", "MinimumReplicasUnavailable", "DeploymentFailed"))]
    exactly_one(slug, objs)


def test_sandbox_v1beta1() -> None:
    objs = [{"spec": {} if mode is None else {"operatingMode": mode},
             "status": {"conditions": cond("Ready", ready) + cond("Suspended", suspended)}}
            for mode, ready, suspended in itertools.product((None, "Running", "Suspended"), TRI, TRI)]
    exactly_one("agents-x-k8s-io-sandbox-v1beta1", objs)


def test_sandbox_v1alpha1() -> None:
    objs = [{"spec": {} if r is None else {"replicas": r}, "status": {"conditions": cond("Ready", ready)}}
            for r, ready in itertools.product((None, 0, 1), TRI)]
    exactly_one("agents-x-k8s-io-sandbox-v1alpha1", objs)


def test_dynamo_v1beta1() -> None:
    exactly_one("nvidia-com-dynamographdeployment-v1beta1",
                [{"status": {} if s is None else {"state": s}}
                 for s in (None, "", "initializing", "pending", "successful", "failed")])
