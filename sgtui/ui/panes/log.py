"""The Log tab: the followed run in view, its log (one node or all with a node column), its timeline
and diagnosis. It renders a `RunSession` and keeps nothing of its own beyond what is on screen."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Input, Static

from sgtui.ui.session.logbuffer import node_line
from sgtui.ui.session.run import RunSession
from sgtui.ui.views import TimelineView
from sgtui.ui.widgets.diagnosis import DiagnosisPanel
from sgtui.ui.widgets.node_timeline import NodeTimeline
from sgtui.ui.widgets.run_log import RunLog
from sgtui.ui.widgets.timeline import Timeline


def tail_of(path: str, room: int) -> str:
    """The end of a path in `room` columns: the run id and file name are what tell runs apart."""
    if room <= 0 or len(path) <= room:
        return path
    return "…" + path[-(room - 1) :] if room > 1 else "…"


class LogPane(Horizontal):
    def __init__(self, max_lines: int, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.max_lines = max_lines
        self.session: RunSession | None = None
        self.upto = 0  # the session's buffer count the view holds: older batches are already shown

    def compose(self) -> ComposeResult:
        with Vertical(id="log-col"):
            yield Input(
                placeholder="filter: show lines containing… (enter keeps, esc clears)", id="log-filter"
            )
            yield RunLog(max_lines=self.max_lines, id="runlog")
            yield Static("", id="log-status")
        with VerticalScroll(id="side"):
            yield NodeTimeline(id="node-timeline")
            yield Timeline(id="timeline")
            yield DiagnosisPanel(id="diagnosis")

    def on_mount(self) -> None:
        self.query_one("#log-filter", Input).display = False

    @property
    def log(self) -> RunLog:
        return self.query_one(RunLog)

    @property
    def diagnosis(self) -> DiagnosisPanel:
        return self.query_one(DiagnosisPanel)

    def welcome(self, lines: list[str]) -> None:
        self.log.write_lines(lines)
        self.draw_status()

    def show(self, session: RunSession | None) -> None:
        """Put `session` on screen: its kept lines, its timeline(s) and its diagnosis."""
        self.session = session
        log = self.log
        log.reset()
        log.set_following(True)
        if session is None:
            self.query_one(Timeline).show(TimelineView())
            self.query_one(NodeTimeline).show([])
            self.query_one(DiagnosisPanel).show([])
            self.draw_status()
            return
        self.upto = session.log.total
        log.append(session.log.lines(session.log_rank))
        self.show_timeline()
        self.show_diagnosis()
        self.draw_status()

    def append(self, session: RunSession, batch: list[tuple[int, str]], skipped: int, upto: int) -> None:
        if session is not self.session or upto <= self.upto:
            return
        self.upto = upto
        rank = session.log_rank
        multi = session.log.multi_node
        if rank is not None:
            lines = [line for r, line in batch if r == rank]
        elif multi:
            lines = [node_line(r, line) for r, line in batch]
        else:
            lines = [line for _, line in batch]
        log = self.log
        if skipped:
            log.append([f"… {skipped:,} lines skipped in a flood (the full log is on the host) …"])
        log.append(lines)
        self.draw_status()

    def show_timeline(self) -> None:
        session = self.session
        if session is None:
            return
        self.query_one(Timeline).show(session.timeline)
        self.query_one(NodeTimeline).show(session.node_timelines() if session.multi_node else [])

    def show_diagnosis(self) -> bool:
        """True when there is a diagnosis to look at (the side pane scrolls to it)."""
        panel = self.query_one(DiagnosisPanel)
        session = self.session
        panel.show(session.diagnoses if session is not None else [])
        if session is not None and session.diagnoses:
            side = self.query_one("#side", VerticalScroll)
            self.call_after_refresh(side.scroll_to_widget, panel, top=True)
            return True
        return False

    def draw_status(self, extra: str = "") -> None:
        log = self.log
        bits = ["following" if log.following else "paused (f follows)"]
        session = self.session
        if session is not None and session.multi_node:
            bits.append("all nodes" if session.log_rank is None else f"node {session.log_rank}")
        if log.filter_text:
            bits.append(f"filter {log.filter_text!r}")
        bits.append(f"{log.total_lines:,} lines")
        status = self.query_one("#log-status", Static)
        if session is not None:
            node = session.nodes.get(session.log_rank if session.log_rank is not None else min(session.nodes))
            path = node.run.log_path if node is not None else ""
            room = status.content_size.width - len(" · ".join(bits)) - len(" · ")
            if path:
                bits.append(tail_of(path, room))
        # one fixed line, redrawn without a layout pass: this runs for every batch of a log flood
        status.update(extra or " · ".join(bits), layout=False)

    def open_filter(self) -> None:
        box = self.query_one("#log-filter", Input)
        box.display = True
        box.focus()

    def close_filter(self) -> None:
        box = self.query_one("#log-filter", Input)
        box.value = ""
        box.display = False
        self.log.focus()

    @on(Input.Changed, "#log-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.log.set_filter(event.value)
        self.draw_status()

    @on(Input.Submitted, "#log-filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        event.stop()
        self.log.focus()
