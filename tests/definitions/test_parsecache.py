"""The content-addressed cache of parsed catalog YAML (workload_map.definitions.parsecache)."""

from __future__ import annotations

from pathlib import Path

import pytest

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
                                     '[["a.yaml", [{"ki', ""])
def test_a_cache_file_of_another_shape_is_parsed_again_and_rewritten(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     content: str) -> None:
    # valid JSON of the wrong shape was taken as it was: a catalog without a definition until deleted
    monkeypatch.setenv("WMAP_CACHE_DIR", str(tmp_path / "cache"))
    a = _write(tmp_path / "cat", "a.yaml", "kind: A\nspec: {n: 1}\n")
    assert parsed_files([a]) == [("a.yaml", [{"kind": "A", "spec": {"n": 1}}])]
    (cache_file,) = (tmp_path / "cache").glob("catalog-*.json")
    cache_file.write_text(content, encoding="utf-8")
    assert parsed_files([a]) == [("a.yaml", [{"kind": "A", "spec": {"n": 1}}])]
    assert parsed_files([a]) == [("a.yaml", [{"kind": "A", "spec": {"n": 1}}])]  # from the rewritten file
    assert cache_file.read_text(encoding="utf-8") == '[["a.yaml", [{"kind": "A", "spec": {"n": 1}}]]]'
