"""The Log tab: the followed run in view, its log (one node or all with a node column), its timeline
and diagnosis. It renders a `RunSession` and keeps nothing of its own beyond what is on screen.

The log itself is `LogColumn` (search box, the line-API `LogView`, its status line): it follows past any
number of lines, pauses on any move up, searches, wraps and opens a line whole.
"""

from __future__ import annotations

import time

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll

from sgtui.ui.screens.line import LineScreen
from sgtui.ui.session.logbuffer import node_line
from sgtui.ui.session.run import RunSession
from sgtui.ui.views import TimelineView
from sgtui.ui.widgets.diagnosis import DiagnosisPanel
from sgtui.ui.widgets.log_column import LogColumn, tail_of
from sgtui.ui.widgets.log_view import LogView
from sgtui.ui.widgets.node_timeline import NodeTimeline
from sgtui.ui.widgets.serving_panel import ServingPanel
from sgtui.ui.widgets.timeline import Timeline

__all__ = ["LogPane", "tail_of"]


class LogPane(Horizontal):
    def __init__(self, max_lines: int, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.max_lines = max_lines
        self.session: RunSession | None = None
        self.upto = 0  # the session's buffer count the view holds: older batches are already shown

    def compose(self) -> ComposeResult:
        yield LogColumn(max_lines=self.max_lines, id="log-col")
        with VerticalScroll(id="side"):
            yield ServingPanel(id="serving")
            yield NodeTimeline(id="node-timeline")
            yield Timeline(id="timeline")
            yield DiagnosisPanel(id="diagnosis")

    @property
    def column(self) -> LogColumn:
        return self.query_one(LogColumn)

    @property
    def log(self) -> LogView:
        return self.query_one(LogView)

    @property
    def diagnosis(self) -> DiagnosisPanel:
        return self.query_one(DiagnosisPanel)

    def welcome(self, lines: list[str]) -> None:
        """What to do, while no run is shown; said again (replaced) when the profile or target changes."""
        if self.session is not None:
            return
        self.log.reset()
        self.log.append(lines)
        self.draw_status()

    def show(self, session: RunSession | None) -> None:
        """Put `session` on screen: its kept lines, its timeline(s) and its diagnosis."""
        self.session = session
        self.query_one(ServingPanel).show(session, getattr(self.app, "clock", time.monotonic)())
        log = self.log
        log.reset()
        column = self.column
        column.extra = ""  # another run's stop progress is not this one's state
        if session is None:
            column.set_path("")
            self.query_one(Timeline).show(TimelineView())
            self.query_one(NodeTimeline).show([])
            self.query_one(DiagnosisPanel).show([], "")
            return
        self.upto = session.log.total
        column.set_path(self._shown_path(session))
        log.append(session.log.lines(session.log_rank))
        self.show_timeline()
        self.show_diagnosis()

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
            log.append([f"… {skipped:,} lines skipped in a flood (the whole log is on the host) …"])
        log.append(lines)

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
        panel.show(session.diagnoses if session is not None else [], session.note if session else "")
        if session is not None and (session.diagnoses or session.note):
            side = self.query_one("#side", VerticalScroll)
            # no animation: a timeline line landing mid-animation left the headline scrolled away
            self.call_after_refresh(side.scroll_to_widget, panel, top=True, animate=False)
            return True
        return False

    def draw_status(self, extra: str = "") -> None:
        """`extra` (stop progress) replaces the view's state until the next call without it."""
        column = self.column
        session = self.session
        where = ""
        if session is not None and session.multi_node:
            where = "all nodes" if session.log_rank is None else f"node {session.log_rank}"
        column.where = where
        if session is not None:
            column.path = self._shown_path(session)
        column.set_extra(extra)

    @staticmethod
    def _shown_path(session: RunSession) -> str:
        """The log file of the node shown (node 0's when all nodes are interleaved)."""
        rank = session.log_rank if session.log_rank is not None else min(session.nodes)
        node = session.nodes.get(rank)
        return node.run.log_path if node is not None else ""

    def open_filter(self) -> None:
        self.column.open_search()

    def close_filter(self) -> None:
        self.column.clear_search()

    @on(LogView.OpenLine)
    def _open_line(self, event: LogView.OpenLine) -> None:
        event.stop()
        self.app.push_screen(LineScreen(event.text, event.number))
