"""What a definition store hands back and raises, shared by every store implementation.

The stores themselves live above this layer: ``workload_map.registration.stores.DirectoryStore``
(offline, a state directory) and ``workload_map.kube.kartas.KartaStore`` (Karta custom
resources). Both return :class:`StoredDefinition` records and raise :class:`StoreError`,
so the registration path and the HTTP error mapping (503) need neither store.
"""

from __future__ import annotations

from typing import Any

from msgspec import Struct

from workload_map.errors import ServerError


class StoreError(ServerError):
    """The definition store cannot be written or read (disk, API server, missing CRD)."""

    code = "store_unavailable"


class StoredDefinition(Struct, frozen=True):
    """One definition as read back from a store.

    Attributes:
        key: the store key (the definition's ``metadata.name``).
        document: the decoded document, or None when it could not be read.
        source: where it came from, for messages (a file path, ``Karta <name>``).
    """

    key: str
    document: Any
    source: str
