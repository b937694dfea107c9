"""One analysis path: every real log in ../shared/logs gets the same outcome, class, phase, error line and
diagnosis through `sgtui explain`, `sgtui launch --watch` and the classifier fed as the TUI feeds it, and
that verdict agrees with the manifest (skipped, saying why, when ../shared is absent)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.logpaths import via_explain, via_tui, via_watch

pytestmark = pytest.mark.sharedlogs


def test_explain_watch_and_the_tui_path_agree_on_every_shared_log(shared_logs: Path) -> None:
    entries = json.loads((shared_logs / "manifest.json").read_text(encoding="utf-8"))
    assert len(entries) == 12
    problems: list[str] = []
    for entry in entries:
        path = shared_logs / entry["file"]
        rc = 1 if entry["outcome"] == "failed" else None  # the run ended with the log, or still runs
        explained = via_explain(path)
        watched, events = via_watch(path, rc)
        followed = via_tui(path, rc)
        if not (explained == watched == followed):
            problems.append(f"{entry['file']}: explain {explained}\n  watch {watched}\n  tui {followed}")
        if explained.outcome != entry["outcome"]:
            problems.append(f"{entry['file']}: outcome {explained.outcome}, manifest {entry['outcome']}")
        if explained.error_class not in entry["error_class_accept"]:
            problems.append(
                f"{entry['file']}: class {explained.error_class} not in {entry['error_class_accept']}"
            )
        printed = [e for e in events if e["event"] == "error"]
        if explained.error_class is not None and explained.outcome == "failed":
            # what --watch printed is the same error, with its phase
            assert printed, entry["file"]
            assert (printed[-1]["error_class"], printed[-1]["line"], printed[-1]["phase"]) == (
                explained.error_class,
                explained.error_line,
                explained.error_phase,
            ), entry["file"]
    assert problems == []
