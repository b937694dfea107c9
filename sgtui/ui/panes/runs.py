"""The Runs tab: every run on every connected target, alive or ended; `Enter` follows one (old logs
stay readable). The mark column says which runs are followed, which is in view, and which changed
state (ready, failed, stalled) while out of view. The state cell carries the host's note on why (a full
disk, the container gone; cut here, whole in the log tab's side panel) and, once a live run's health goes
unconfirmed on a lost or silent link, its age ("ready, last seen 35s ago"); a host that is not connected
has its rows greyed."""

from __future__ import annotations

from rich.text import Text
from textual.message import Message
from textual.widgets import DataTable

from sgtui.ui.session.ages import age_text
from sgtui.ui.status_line import stale_text
from sgtui.ui.views import RunView

STATE_STYLE = {
    "ready": "bold green",
    "running": "green",
    "starting": "cyan",
    "stalled": "bold yellow",
    "failed": "bold red",
    "stopped": "yellow",
    "dead": "red",
    "exited": "dim",
}
MARKS = {"view": ("▶", "bold"), "followed": ("•", ""), "changed": ("!", "bold yellow")}
NOTE_CHARS = 60  # of the host's note in the state cell; the side panel and `sgtui runs` have it whole


def row_key(run: RunView) -> str:
    return run.run_id if run.node_rank is None else f"{run.run_id}:{run.node_rank}"


def state_cell(run: RunView, silence: float | None = None) -> Text:
    """The run's state; stale: "ready, last seen 35s ago"; with the host's note on why, cut to fit."""
    if silence is not None:
        text = stale_text(run.state, silence)
    else:
        text = Text(run.state, style=STATE_STYLE.get(run.state, ""))
    if run.rate:
        text.append(f" · {run.rate}", style="cyan")
    if run.note:
        note = run.note if len(run.note) <= NOTE_CHARS else run.note[: NOTE_CHARS - 1] + "…"
        text.append(f": {note}", style="yellow")
    return text


class RunsTable(DataTable[Text | str]):
    class Open(Message):
        def __init__(self, run: RunView) -> None:
            super().__init__()
            self.run = run

    def __init__(self, **kwargs: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)  # type: ignore[arg-type]
        self.runs: list[RunView] = []
        self.marks: dict[str, str] = {}
        self.silence: dict[str, float] = {}
        self._drawn: tuple[object, ...] = ()

    def on_mount(self) -> None:
        self.add_columns("", "host", "run", "state", "target", "profile", "started", "log")

    def show(
        self,
        runs: list[RunView],
        marks: dict[str, str],
        silence: dict[str, float] | None = None,
        greyed: frozenset[str] = frozenset(),
    ) -> None:
        """`marks`: run id -> "view" | "followed" | "changed"; each run's state as the app knows it;
        `silence`: row key -> seconds a live run's health has gone unconfirmed (shown stale); `greyed`:
        the hosts not connected, whose rows are dimmed. Nothing changed: nothing is redrawn."""
        silence = silence or {}
        drawn = (runs, marks, {k: age_text(v) for k, v in silence.items()}, greyed)
        if drawn == self._drawn:
            return
        self._drawn = drawn
        self.runs = runs
        self.marks = marks
        self.silence = silence
        keep = self.cursor_row
        self.clear()
        for run in runs:
            mark, mark_style = MARKS.get(marks.get(run.run_id, ""), ("", ""))
            node = "" if run.node_rank is None else f" n{run.node_rank}"
            cells = [
                Text(mark, style=mark_style),
                Text(run.host),
                Text(run.run_id + node),
                state_cell(run, silence.get(row_key(run))),
                Text(run.target),
                Text(run.profile),
                Text(run.started),
                Text(run.log_path),
            ]
            if run.host in greyed:  # its host is not connected: what the row says is no longer live
                for cell in cells:
                    cell.stylize("dim")
            self.add_row(*cells, key=row_key(run))
        if runs:
            self.move_cursor(row=min(keep, len(runs) - 1))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        key = event.row_key.value
        for run in self.runs:
            if row_key(run) == key:
                self.post_message(self.Open(run))
