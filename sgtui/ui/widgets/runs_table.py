"""Every run on the target, alive or ended; enter opens its log (old logs stay readable)."""

from __future__ import annotations

from rich.text import Text
from textual.message import Message
from textual.widgets import DataTable

from sgtui.ui.views import RunView

STATE_STYLE = {
    "ready": "bold green",
    "running": "green",
    "starting": "cyan",
    "failed": "bold red",
    "stopped": "yellow",
    "exited": "dim",
}


class RunsTable(DataTable[Text | str]):
    class Open(Message):
        def __init__(self, run: RunView) -> None:
            super().__init__()
            self.run = run

    def __init__(self, **kwargs: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)  # type: ignore[arg-type]
        self.runs: list[RunView] = []
        self.followed: str | None = None

    def on_mount(self) -> None:
        self.add_columns("", "run", "state", "target", "profile", "started", "log")

    def show(self, runs: list[RunView], followed: str | None) -> None:
        self.runs = runs
        self.followed = followed
        keep = self.cursor_row
        self.clear()
        for run in runs:
            self.add_row(
                "▶" if run.run_id == followed else "",
                Text(run.run_id),
                Text(run.state, style=STATE_STYLE.get(run.state, "")),
                Text(run.target),
                Text(run.profile),
                Text(run.started),
                Text(run.log_path),
                key=run.run_id,
            )
        if runs:
            self.move_cursor(row=min(keep, len(runs) - 1))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        key = event.row_key.value
        for run in self.runs:
            if run.run_id == key:
                self.post_message(self.Open(run))
