"""The payload that reads a target's flag table runs on the target's Python, not sgtui's: stdlib only,
3.8 syntax, and a result or an error as one marker line."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from sgtui.remote.flag_probe import PAYLOAD_PATH

STDLIB = set(sys.stdlib_module_names)


def test_the_payload_is_python_3_8_and_imports_only_the_stdlib() -> None:
    tree = ast.parse(PAYLOAD_PATH.read_text(), feature_version=(3, 8))
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])
    }
    assert imported - {"sglang"} <= STDLIB, imported - STDLIB


def test_an_interpreter_without_sglang_prints_one_error_line(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-I", "-c", PAYLOAD_PATH.read_text()], capture_output=True, text=True, cwd=tmp_path
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("@@sgtui-flags ")]
    assert proc.returncode == 1 and len(lines) == 1
    error = json.loads(lines[0].split(" ", 1)[1])["error"]
    assert "sglang" in error and "\n" not in error


def test_a_fake_sglang_parser_is_read_with_every_kind(tmp_path: Path) -> None:
    """A minimal `sglang.srt.server_args` (as the simulator installs): kinds, choices and deprecations."""
    from sgtui.sim.flagtable import install_parser

    install_parser(tmp_path / "sglang", "0.5.18")
    (tmp_path / "sglang" / "__init__.py").write_text("")
    proc = subprocess.run(
        [sys.executable, str(PAYLOAD_PATH), str(tmp_path)], capture_output=True, text=True, check=True
    )
    rows = json.loads(proc.stdout.split("@@sgtui-flags ", 1)[1])["rows"]
    by_option = {row["options"][0]: row for row in rows}
    assert by_option["--tp-size"]["kind"] == "int"
    assert by_option["--context-length"]["kind"] == "human_int"
    assert by_option["--disable-radix-cache"]["kind"] == "bool"
    alias = by_option["--cuda-graph-max-bs"]
    assert (
        alias["deprecated"] and alias["new_flag"] == "--cuda-graph-max-bs-decode" and alias["kind"] == "int"
    )
    assert by_option["--enable-expert-distribution-metrics"]["error_message"].startswith(
        "--enable-expert-distribution-metrics is no longer supported"
    )
    assert "--sim-log-note" in by_option
