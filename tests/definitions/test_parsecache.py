"""The content-addressed cache of parsed catalog YAML (workload_map.definitions.parsecache)."""

from __future__ import annotations

from pathlib import Path

import pytest

import json
from hashlib import blake2b

from workload_map.definitions import parsecache
from workload_map.definitions.parsecache import parsed_files
from workload_map.errors import InvalidRequest


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_hit_gives_the_same_documents_and_an_edit_misses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WMAP_CACHE_DIR", str(tmp_path / "cache"))
    a = _write(tmp_path / "cat", "a.yaml", "kind: A\nspec: {n: 1}\n---\nkind: B\n")
    first = parsed_files([a])
    assert first == [("a.yaml", [{"kind": "A", "spec": {"n": 1}}, {"kind": "B"}])]
    assert len(list((tmp_path / "cache").glob("catalog-*.json"))) == 1
    assert parsed_files([a]) == first  # from the cache file
    a.write_text("kind: A\nspec: {n: 2}\n", encoding="utf-8")  # same name, new bytes: a new key
    assert parsed_files([a]) == [("a.yaml", [{"kind": "A", "spec": {"n": 2}}])]
    assert len(list((tmp_path / "cache").glob("catalog-*.json"))) == 2


def test_what_json_cannot_hold_is_not_cached_and_errors_are_never_cached(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WMAP_CACHE_DIR", str(tmp_path / "cache"))
    ints = _write(tmp_path / "cat", "ints.yaml", "1: one\n")  # an int key: JSON would make it "1"
    assert parsed_files([ints]) == [("ints.yaml", [{1: "one"}])]
    assert not list((tmp_path / "cache").glob("catalog-*.json"))
    twice = _write(tmp_path / "cat", "twice.yaml", "a: 1\na: 2\n")
    with pytest.raises(InvalidRequest, match="twice.yaml"):
        parsed_files([twice])
    assert not list((tmp_path / "cache").glob("catalog-*.json"))


def test_an_empty_cache_dir_setting_turns_it_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WMAP_CACHE_DIR", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    a = _write(tmp_path / "cat", "a.yaml", "kind: A\n")
    assert parsed_files([a]) == [("a.yaml", [{"kind": "A"}])]
    assert not (tmp_path / "xdg").exists()


@pytest.mark.parametrize("content", ["[]", "{}", "null", '"text"', '[["a.yaml"]]', '[["b.yaml", [{"kind": "X"}]]]',
                                     '[["a.yaml", {"kind": "X"}]]', '[["a.yaml", [{"kind": "A"}]], ["extra", []]]',
                                     '[["a.yaml", [{"ki', "", '[["a.yaml", []]]', '[["a.yaml", [null]]]',
                                     '[["a.yaml", [{}]]]', "[" * 100_000 + "]" * 100_000])
@pytest.mark.parametrize("checksummed", [False, True])
def test_a_cache_file_changed_or_of_another_shape_is_parsed_again_and_rewritten(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str, checksummed: bool) -> None:
    # valid JSON of the wrong shape, or of the right shape with other documents ([["a.yaml", []]]),
    # was taken as it was: a catalog without a definition until deleted (deep nesting: a traceback);
    # checksummed: a file whose checksum line matches what follows is still checked for shape
    monkeypatch.setenv("WMAP_CACHE_DIR", str(tmp_path / "cache"))
    a = _write(tmp_path / "cat", "a.yaml", "kind: A\nspec: {n: 1}\n")
    assert parsed_files([a]) == [("a.yaml", [{"kind": "A", "spec": {"n": 1}}])]
    (cache_file,) = (tmp_path / "cache").glob("catalog-*.json")
    written = cache_file.read_bytes()
    body = content.encode()
    cache_file.write_bytes((parsecache._checksum(body) + b"\n" + body) if checksummed else body)
    shape_only = checksummed and content in ('[["a.yaml", []]]', '[["a.yaml", [null]]]', '[["a.yaml", [{}]]]')
    expected = [("a.yaml", [{"kind": "A", "spec": {"n": 1}}])]
    if shape_only:  # written with its checksum on purpose and of the right shape: it is what it says
        assert parsed_files([a]) == [("a.yaml", json.loads(content)[0][1])]
        return
    assert parsed_files([a]) == expected
    assert cache_file.read_bytes() == written  # rewritten as the parse writes it
    assert parsed_files([a]) == expected  # from the rewritten file
    assert list((tmp_path / "cache").iterdir()) == [cache_file]  # no temporary file left


def test_the_cache_file_is_its_checksum_then_its_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WMAP_CACHE_DIR", str(tmp_path / "cache"))
    a = _write(tmp_path / "cat", "a.yaml", "kind: A\n")
    parsed_files([a])
    (cache_file,) = (tmp_path / "cache").glob("catalog-*.json")
    head, _, body = cache_file.read_bytes().partition(b"\n")
    assert body == b'[["a.yaml", [{"kind": "A"}]]]' and len(head) == 32
    assert head == blake2b(body, digest_size=16).hexdigest().encode()


def test_a_folder_in_the_cache_files_place_leaves_no_temporary_file(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WMAP_CACHE_DIR", str(tmp_path / "cache"))
    a = _write(tmp_path / "cat", "a.yaml", "kind: A\n")
    parsed_files([a])
    (cache_file,) = (tmp_path / "cache").glob("catalog-*.json")
    cache_file.unlink()
    cache_file.mkdir()
    for _ in range(3):
        assert parsed_files([a]) == [("a.yaml", [{"kind": "A"}])]
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [cache_file.name]  # no .catalog-*.tmp
