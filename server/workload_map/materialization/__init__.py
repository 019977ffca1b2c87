"""Materialization: keeps one resolved view of every top-level workload up to date.

The engine behind the read service (``workload_map.service``): the ``Materializer`` loop,
its work queue (``scheduler.DirtySet``), the worker pool (``pool``, ``worker``: the only
place jq runs on the serving path), the view store and its aggregates (``views``), view
compaction (``compaction``), the shared-ResourceClaim index (``claims``) and the change feed
(``feed``). May import ``workload_map.kube``, ``workload_map.resolution`` and lower layers;
never the read service or registration above it.
"""
