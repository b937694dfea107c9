"""The core stays pure: nothing under sgtui/core may import Textual, asyncssh or the other layers."""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parent.parent / "sgtui" / "core"
FORBIDDEN = (
    "textual",
    "asyncssh",
    "pynvml",
    "plotext",
    "textual_plotext",
    "sgtui.ui",
    "sgtui.remote",
    "sgtui.sim",
)


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def test_core_imports_no_ui_network_or_other_layers() -> None:
    offenders = [
        f"{p.relative_to(CORE.parent.parent)} imports {name}"
        for p in sorted(CORE.rglob("*.py"))
        for name in _imports(p)
        if any(name == f or name.startswith(f + ".") for f in FORBIDDEN)
    ]
    assert offenders == []


def test_the_check_sees_a_forbidden_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import textual.app\nfrom asyncssh import connect\n")
    assert _imports(bad) == ["textual.app", "asyncssh"]


def test_remote_does_not_import_the_ui() -> None:
    remote = CORE.parent / "remote"
    offenders = [
        f"{p.name} imports {n}"
        for p in sorted(remote.rglob("*.py"))
        for n in _imports(p)
        if n == "textual" or n.startswith("textual.") or n.startswith("sgtui.ui")
    ]
    assert offenders == []
