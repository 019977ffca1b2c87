"""Control and invisible formatting characters in names, phases and reasons are printed as
escapes in the text outputs and in the warnings and errors on stderr."""

from __future__ import annotations

import json
from pathlib import Path

from workload_map.logs import printable
from tests.cli.test_kubectl_like import wmap


def test_printable_escapes_controls_and_invisible_formatting_only() -> None:
    assert printable("bad\x1b[31mred\x7f\x9b\tx") == "bad\\x1b[31mred\\x7f\\x9b\\x09x"
    assert printable("a\u202eb\u2028c\u200bd\ufeff") == "a\\u202eb\\u2028c\\u200bd\\ufeff"
    assert printable("gpu-node-03 é 😀 日本") == "gpu-node-03 é 😀 日本"


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


def test_warnings_and_start_errors_on_stderr_escape_them_too(tmp_path: Path) -> None:
    # a name with a newline used to forge a separate "warning:" line; an escape sequence reached the terminal
    path = tmp_path / "pods.yaml"
    path.write_text('apiVersion: v1\nkind: Pod\nmetadata: {name: "x\\nwarning: all fine\\e[2J", namespace: 5}\n'
                    "---\napiVersion: v1\nkind: Pod\nmetadata: {name: good, namespace: team}\n")
    described = wmap("describe", "-f", str(path), "-o", "tree")
    assert described.returncode == 0
    assert described.stderr.splitlines() == [
        f"warning: {path} (document 1, line 1): Pod x\\x0awarning: all fine\\x1b[2J: metadata.namespace is int, "
        "not a string"]
    served = wmap("serve", "--snapshot", str(path), "--port", "0", "--host", "127.0.0.1")
    assert served.returncode == 6 and "\x1b" not in served.stderr
    assert served.stderr.splitlines()[-1] == ("error: wmap serve did not start: SnapshotError: Pod x\\x0awarning: all "
                                              "fine\\x1b[2J: metadata.namespace is int, not a string")
