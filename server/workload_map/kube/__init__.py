"""Kube cache: the only package that talks to the Kubernetes API (``kubernetes_asyncio``).

Owns API client configuration (``client``), raw list/watch calls (``api``), reflectors
(``reflector``), discovery and CRD tracking (``discovery``), per-GVK stores and the owner
graph (``store``, ``graph``, ``trim``), the live ``InformerCache`` (``cache``) and the
static ``SnapshotReader`` (``snapshot``, reading JSON through ``jsonstream``). Other layers
depend only on the ``Reader`` protocol in ``reader``.

Must not import ``workload_map.service``, ``workload_map.api``, ``workload_map.resolution``, ``schema`` or
any web framework. ``reader``, ``store``, ``graph``, ``trim``, ``snapshot`` and
``jsonstream`` must not import ``kubernetes_asyncio`` (nor anything that does), so offline
code can use them; this ``__init__`` therefore imports nothing.
"""
