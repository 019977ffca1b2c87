"""The definition model's records (``msgspec.Struct``): equality, hashing, immutability."""

from __future__ import annotations

import pickle
from unittest import mock

import msgspec.structs
import pytest

from workload_map.definitions.catalog import load_catalog
from workload_map.definitions.model import Definition
from workload_map.paths import default_catalog_dir


def jobset() -> Definition:
    return load_catalog(default_catalog_dir()).find("jobset-x-k8s-io-jobset-v1alpha2").definition


def test_a_definition_is_equal_whatever_its_manifest_and_unequal_when_a_field_differs() -> None:
    base = jobset()
    other = msgspec.structs.replace(base, manifest={"kind": "Karta", "spec": {}})
    assert base == other and not base != other and hash(base) == hash(other)  # != is not msgspec's own
    assert len({base, other}) == 1
    renamed = msgspec.structs.replace(base, name="renamed")
    assert base != renamed and not base == renamed
    fewer = msgspec.structs.replace(base, children=base.children[:-1])
    assert base != fewer and len(base.children) - len(fewer.children) == 1
    assert base != "jobset" and base != None  # noqa: E711 - any other type is unequal, never an error
    assert base == mock.ANY and mock.ANY == base  # another type's own __eq__ is asked (NotImplemented)


def test_a_definition_is_frozen_and_pickles_back_equal_with_its_manifest() -> None:
    base = jobset()
    with pytest.raises(AttributeError):
        base.name = "other"  # type: ignore[misc]
    back = pickle.loads(pickle.dumps(base))
    assert back == base and back.manifest == base.manifest and back.root.kind == base.root.kind
