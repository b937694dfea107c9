"""`sgtui explain --json` agrees with ../shared/logs/manifest.json on every real log (skipped when absent)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sgtui.cli import main

pytestmark = pytest.mark.sharedlogs


def _entries(folder: Path) -> list[dict[str, Any]]:
    return json.loads((folder / "manifest.json").read_text(encoding="utf-8"))


def _in_order(wanted: list[str], found: list[str]) -> bool:
    remaining = iter(found)
    return all(kind in remaining for kind in wanted)


def test_explain_json_matches_the_manifest_of_every_shared_log(
    shared_logs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    problems: list[str] = []
    for entry in _entries(shared_logs):
        name = entry["file"]
        assert main(["explain", str(shared_logs / name), "--json"]) == 0
        report = json.loads(capsys.readouterr().out)
        if report["outcome"] != entry["outcome"]:
            problems.append(f"{name}: outcome {report['outcome']!r}, manifest {entry['outcome']!r}")
        if report["error_class"] not in entry["error_class_accept"]:
            problems.append(
                f"{name}: error_class {report['error_class']!r} not in {entry['error_class_accept']}"
            )
        kinds = [m["kind"] for m in report["milestones"]]
        if not _in_order(entry["milestones"], kinds):
            problems.append(f"{name}: milestones {kinds} lack {entry['milestones']} in order")
        for fact, expected in entry["facts"].items():
            if expected is not None and report["facts"].get(fact) != expected:
                problems.append(f"{name}: fact {fact} = {report['facts'].get(fact)!r}, manifest {expected!r}")
    assert problems == []


@pytest.mark.parametrize("prefix", ["sglang-1  | ", "Mar 02 08:00:58 gpu-host python3[40211]: ", "> "])
def test_every_shared_log_reads_the_same_behind_a_collector_prefix(shared_logs: Path, prefix: str) -> None:
    from sgtui.core.logs import classify_text

    def verdict(text: str) -> tuple[Any, ...]:
        analysis = classify_text(text)
        report = analysis.to_json()
        kinds = [(m["kind"], m["line"]) for m in report["milestones"]]
        return report["outcome"], report["error_class"], report["error_line"], kinds, report["facts"]

    for entry in _entries(shared_logs):
        text = (shared_logs / entry["file"]).read_text(encoding="utf-8", errors="replace")
        if classify_text(text).reversed_order:
            continue  # a cloud export carries its own stamps; nothing wraps it again
        wrapped = "".join(prefix + line for line in text.splitlines(keepends=True))
        assert verdict(wrapped) == verdict(text), entry["file"]
