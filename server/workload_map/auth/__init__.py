"""Caller identity and visibility: who is asking, and what they may see or change.

Owns bearer-token parsing and hashing (``identity``), cached TokenReview /
SubjectAccessReview decisions and the per-request ``Guard`` (``access``), and the
visibility rules built on them (``scope``): list results filtered to the (kind, namespace)
pairs the caller may list, single workloads hidden as "not found", pod details only where
the caller may get pods.

May import ``workload_map.service``, ``workload_map.resolution``, ``workload_map.kube.reader`` and the value
types of ``workload_map.kube.reviews``; never a web framework, never ``kubernetes_asyncio``
(the reviewer is passed in by ``workload_map.app``).
"""
