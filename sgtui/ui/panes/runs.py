"""The Runs tab: every run on every connected target, alive or ended; `Enter` follows one (old logs
stay readable). The mark column says which runs are followed, which is in view, and which changed
state (ready, failed, stalled) while out of view."""

from __future__ import annotations

from rich.text import Text
from textual.message import Message
from textual.widgets import DataTable

from sgtui.ui.views import RunView

STATE_STYLE = {
    "ready": "bold green",
    "running": "green",
    "starting": "cyan",
    "stalled": "bold yellow",
    "failed": "bold red",
    "stopped": "yellow",
    "exited": "dim",
}
MARKS = {"view": ("▶", "bold"), "followed": ("•", ""), "changed": ("!", "bold yellow")}


def row_key(run: RunView) -> str:
    return run.run_id if run.node_rank is None else f"{run.run_id}:{run.node_rank}"


class RunsTable(DataTable[Text | str]):
    class Open(Message):
        def __init__(self, run: RunView) -> None:
            super().__init__()
            self.run = run

    def __init__(self, **kwargs: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)  # type: ignore[arg-type]
        self.runs: list[RunView] = []
        self.marks: dict[str, str] = {}

    def on_mount(self) -> None:
        self.add_columns("", "host", "run", "state", "target", "profile", "started", "log")

    def show(self, runs: list[RunView], marks: dict[str, str]) -> None:
        """`marks`: run id -> "view" | "followed" | "changed"; each run's state as the app knows it."""
        self.runs = runs
        self.marks = marks
        keep = self.cursor_row
        self.clear()
        for run in runs:
            mark, mark_style = MARKS.get(marks.get(run.run_id, ""), ("", ""))
            node = "" if run.node_rank is None else f" n{run.node_rank}"
            self.add_row(
                Text(mark, style=mark_style),
                Text(run.host),
                Text(run.run_id + node),
                Text(run.state, style=STATE_STYLE.get(run.state, "")),
                Text(run.target),
                Text(run.profile),
                Text(run.started),
                Text(run.log_path),
                key=row_key(run),
            )
        if runs:
            self.move_cursor(row=min(keep, len(runs) - 1))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        key = event.row_key.value
        for run in self.runs:
            if row_key(run) == key:
                self.post_message(self.Open(run))
