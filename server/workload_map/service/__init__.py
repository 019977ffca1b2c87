"""The read service: what every front door asks about workloads.

``workloads.WorkloadService`` answers reads of one cluster from the materialized views
(``workload_map.materialization``), ``fleet.Fleet`` combines several clusters' services,
``pagination``, ``rows``, ``lookup`` and ``pods`` shape answers, and ``actions`` plans the
writes to workload objects (suspend, pod-template changes).
"""
