"""Control characters in names and phases are printed as escapes in the text outputs."""

from __future__ import annotations

import json
from pathlib import Path

from workload_map.cli.render import printable
from tests.cli.test_kubectl_like import wmap


def test_printable_escapes_c0_del_and_c1_only() -> None:
    assert printable("bad\x1b[31mred\x7f\x9b\tx") == "bad\\x1b[31mred\\x7f\\x9b\\x09x"
    assert printable("gpu-node-03 é 😀") == "gpu-node-03 é 😀"


def test_tree_and_table_show_an_escape_sequence_as_text(tmp_path: Path) -> None:
    path = tmp_path / "pod.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "Pod",
                                "metadata": {"name": "bad\x1b[2Jred", "namespace": "team"},
                                "status": {"phase": "Running\x1b[31m"}}))
    tree = wmap("describe", "-f", str(path), "-o", "tree")
    assert tree.returncode == 0 and "\x1b" not in tree.stdout
    assert tree.stdout.splitlines()[0].startswith("Pod/bad\\x1b[2Jred   namespace: team")
    assert "Running\\x1b[31m" in tree.stdout
    table = wmap("get", "pod", "-A", "--snapshot", str(path))
    assert table.returncode == 0 and "\x1b" not in table.stdout and "bad\\x1b[2Jred" in table.stdout
    # JSON keeps the value exact (escaped by JSON's own rule)
    assert json.loads(wmap("describe", "-f", str(path), "-o", "json").stdout)["name"] == "bad\x1b[2Jred"
