"""Benchmarks of workload-map-server: ``python -m benchmarks`` (``make bench``).

Modules:

* ``generator``: synthetic clusters (N workloads over the catalog types, ~10 pods each);
* ``machine``: the machine and load description printed with every run;
* ``stats``: medians, percentiles, bounded timing loops;
* ``resolution``: cold resolution throughput, jq share, fast-path gain;
* ``queries``: warm query latency through the ASGI app in process;
* ``memory``: bytes per cached pod, per workload and per memoized view (tracemalloc);
* ``cluster``: figures against a real kube-apiserver + etcd (``tests/cluster``);
* ``report``: targets, the printed table and ``benchmarks/results/latest.json``.
"""
