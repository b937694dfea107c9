"""The guide's size rule: no module over 400 lines and no class over 300 in sgtui/ (a longer one is two ideas:
split it along them, as LogClassifier/PhaseLog, RunManager/RunStopper and RemoteBackend/RemoteConnections)."""

from __future__ import annotations

import ast
from pathlib import Path

SGTUI = Path(__file__).resolve().parent.parent / "sgtui"
MAX_MODULE_LINES = 400
MAX_CLASS_LINES = 300


def test_no_module_over_400_lines_and_no_class_over_300() -> None:
    over: list[str] = []
    for path in sorted(SGTUI.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        name = path.relative_to(SGTUI.parent)
        if (lines := len(text.splitlines())) > MAX_MODULE_LINES:
            over.append(f"{name}: {lines} lines")
        for node in ast.walk(ast.parse(text, filename=str(path))):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                length = node.end_lineno - node.lineno + 1
                if length > MAX_CLASS_LINES:
                    over.append(f"{name}:{node.lineno} class {node.name}: {length} lines")
    assert over == []
