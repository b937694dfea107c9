"""One analysis path: what the TUI shows about a run comes from the same classifier calls as `sgtui explain`
(and `launch --watch`): feed per chunk, process_exited(rc) when the process ends, finish at end of log."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from textual.message import Message

from sgtui.core.logs import LogClassifier, classify_text, diagnose
from sgtui.ui import messages as m
from sgtui.ui.backend import RunExit
from sgtui.ui.session.run import RunSession
from sgtui.ui.views import RunView
from sgtui.ui.workers.follow import Follower
from tests.ui.fakes import FakeBackend

LOGS = sorted(p.name for p in (Path(__file__).resolve().parents[3] / "shared" / "logs").glob("*.log"))


class EndedRun(FakeBackend):
    """The run's log is the given text; its process state is what the test says."""

    def __init__(self, lines: list[str], state: str = "unknown", rc: int | None = None) -> None:
        super().__init__()
        self.existing_logs["r"] = lines
        self.end = RunExit(state, rc)

    async def run_exit(self, run: RunView) -> RunExit:
        return self.end


def follow(
    lines: list[str], state: str = "unknown", rc: int | None = None
) -> tuple[RunSession, list[Message]]:
    """The TUI's own path: a tail worker feeding the run's session, then the process end and end of log."""
    posted: list[Message] = []
    run = RunView("r", "h", "bare host", "p", "starting", "/logs/r/server.log")
    session = RunSession(run, None, posted.append, max_lines=1_000_000)
    asyncio.run(Follower(EndedRun(lines, state, rc), session, 0).run())
    return session, posted


def failed_with(session: RunSession, posted: list[Message]) -> list[tuple[str, str]] | None:
    """What the screen shows: None unless the run's state went to failed; then its diagnosis."""
    outcomes = [p.outcome for p in posted if isinstance(p, m.RunOutcome)]
    if not outcomes or outcomes[-1] != "failed":
        return None
    return [(d.title, d.detail) for d in session.diagnoses]


def summary(analysis: Any, diagnoses: list[Any]) -> dict[str, Any]:
    error = analysis.error
    return {
        "outcome": analysis.outcome,
        "error_class": error.error_class if error else None,
        "error_line": error.line if error else None,
        "phase": analysis.state.phase,
        "diagnosis": [(d.title, d.detail) for d in diagnoses],
    }


@pytest.mark.parametrize("name", LOGS or ["(none)"])
def test_every_real_log_gets_the_same_verdict_in_the_tui_as_in_explain(shared_logs: Path, name: str) -> None:
    text = (shared_logs / name).read_text(errors="replace")
    if classify_text(text).reversed_order:
        # a cloud-logging export written newest first: a live server writes oldest first, so the TUI
        # follows it in that order, and explain reads that same text the same way
        text = "\n".join(reversed(text.rstrip("\n").split("\n"))) + "\n"
    explained = classify_text(text)
    want = summary(explained, diagnose(explained, None))
    session, posted = follow(text.splitlines())
    got_analysis = session.nodes[0].tracker.classifier.analysis()
    got = summary(got_analysis, diagnose(got_analysis, None))
    assert got == want
    outcomes = [p.outcome for p in posted if isinstance(p, m.RunOutcome)]
    if want["outcome"] in ("ready", "failed"):
        assert outcomes and outcomes[-1] == want["outcome"]
    if want["outcome"] == "failed":  # the panel shows the whole log's diagnosis, not the first error's
        assert failed_with(session, posted) == want["diagnosis"]


def test_a_missing_module_gets_the_diagnosis_explain_prints(tmp_path: Path) -> None:
    """The issue's case: a real Python raising ModuleNotFoundError at import, then exiting 1."""
    import subprocess

    package = tmp_path / "sglang"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "launch_server.py").write_text("import sgtui_no_such_module_numpy\n")
    run = subprocess.run(
        [sys.executable, "-m", "sglang.launch_server", "--model-path", "m"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert run.returncode == 1 and "ModuleNotFoundError" in run.stderr
    watched = LogClassifier()  # what `sgtui launch --watch` does with the same run
    watched.feed(run.stderr)
    watched.process_exited(run.returncode)
    expected = diagnose(watched.analysis(), None)
    assert [d.title for d in expected] == ["A Python package is missing or broken"]
    session, posted = follow(run.stderr.splitlines(), "failed", run.returncode)
    assert failed_with(session, posted) == [(d.title, d.detail) for d in expected]


def test_a_nonzero_exit_with_a_quiet_log_is_a_failure_not_starting() -> None:
    session, posted = follow(["[2026-01-01 00:00:00] server_args=ServerArgs(model_path='m')"], "failed", 137)
    assert failed_with(session, posted) is not None
