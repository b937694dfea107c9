"""What `sgtui fleet` prints: one JSON object per host per sample, or a compact table of all hosts.

At 500 hosts sampled every second the JSON lines are most of the command's own work, so the parts that
rarely change (a host's GPUs, its runs) are encoded once per change and reused while they stay the same
objects (`remote/fleet.py` keeps the same `GpuSummary` for an unchanged reading); only the age is new.
Outside text (host names, reasons, GPU names) goes through `json.dumps` or is cleaned of control
characters in the table.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from sgtui.core.ages import age_text
from sgtui.core.logs.prefix import strip_controls
from sgtui.remote.connection import ConnState
from sgtui.remote.fleet import GpuSummary, HostView
from sgtui.remote.fleet_runs import RunRow

FLUSH_S = 0.05  # a line is out within this long of its sample
BUSY_MIB = 1024  # a GPU holding more than this is in use (the fleet view's rule, `GpuSummary.busy`)


def answered(view: HostView) -> bool:
    """Up, and its GPUs were read (a named GPU problem such as "no driver" is an answer too)."""
    gpus = view.gpus
    return (
        view.state is ConnState.UP
        and gpus is not None
        and not (gpus.problem or "").startswith(ConnState.UNREACHABLE.value)
    )


def error_of(view: HostView) -> str | None:
    if view.reason:
        return view.reason
    if view.gpus is not None and view.gpus.problem:
        return view.gpus.problem
    return view.runs_problem


def gpus_json(summary: GpuSummary | None) -> list[dict[str, Any]]:
    if summary is None:
        return []
    return [
        {
            "index": g.index,
            "name": g.name,
            "used_mib": _int(g.memory_used_mib.value),
            "total_mib": _int(g.memory_total_mib.value),
            "util": _int(g.utilization_pct.value),
        }
        for g in summary.readings
    ]


def host_json(view: HostView, now: float | None = None) -> dict[str, Any]:
    """The DESIGN.md object for one host (the Printer writes the same, encoded in parts)."""
    age = view.gpu_age(now)
    return {
        "host": view.name,
        "state": view.state.value,
        "age_s": None if age is None else round(age, 1),
        "error": error_of(view),
        "gpus": gpus_json(view.gpus),
        "runs": [r.to_json() for r in view.run_rows],
    }


def free_gpus(summary: GpuSummary | None) -> int | None:
    if summary is None or summary.problem:
        return None
    return sum(1 for used, _total in summary.per_gpu if used <= BUSY_MIB)


class Printer:
    """Writes host objects (`json_lines`) or tables to `out`, flushing each."""

    def __init__(self, out: TextIO, *, json_lines: bool) -> None:
        self.out = out
        self.json_lines = json_lines
        self._gpus: dict[str, tuple[GpuSummary | None, str]] = {}
        self._runs: dict[str, tuple[tuple[RunRow, ...], str]] = {}
        self._said: dict[str, tuple[ConnState, str | None]] = {}
        self._flush_at: asyncio.TimerHandle | None = None
        self.broken = False
        self.on_broken: Callable[[], None] | None = None  # the command stops streaming

    def sample(self, view: HostView) -> None:
        self.write(view)

    def change(self, view: HostView) -> None:
        """A host that is not up is written when its state or reason changes (an up one at its samples)."""
        if view.state is ConnState.UP:
            return
        said = (view.state, view.reason)
        if self._said.get(view.name) != said:
            self.write(view)

    def write(self, view: HostView) -> None:
        self._said[view.name] = (view.state, view.reason)
        if self.broken:
            return
        try:
            self.out.write(self.line(view))
        except BrokenPipeError:
            self._broke()
            return
        if self._flush_at is None:  # one flush for the lines of the next FLUSH_S, not one per line
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                self.flush()
                return
            self._flush_at = loop.call_later(FLUSH_S, self.flush)

    def flush(self) -> None:
        self._flush_at = None
        if self.broken:
            return
        try:
            self.out.flush()
        except BrokenPipeError:
            self._broke()

    def _broke(self) -> None:
        """The reader left (`sgtui fleet --json | head`): stop writing and tell the command."""
        self.broken = True
        if self.on_broken is not None:
            self.on_broken()

    def line(self, view: HostView, now: float | None = None) -> str:
        name = view.name
        gpus = self._gpus.get(name)
        if gpus is None or gpus[0] is not view.gpus:
            gpus = self._gpus[name] = (view.gpus, json.dumps(gpus_json(view.gpus)))
        runs = self._runs.get(name)
        if runs is None or runs[0] is not view.run_rows:
            runs = self._runs[name] = (view.run_rows, json.dumps([r.to_json() for r in view.run_rows]))
        age = view.gpu_age(now)
        error = error_of(view)
        return (
            f'{{"host": {json.dumps(name)}, "state": "{view.state.value}", '
            f'"age_s": {"null" if age is None else round(age, 1)}, '
            f'"error": {"null" if error is None else json.dumps(error)}, '
            f'"gpus": {gpus[1]}, "runs": {runs[1]}}}\n'
        )

    def table(self, views: Sequence[HostView]) -> None:
        """HOST STATE AGE GPUS FREE MEMORY UTIL RUNS: one row per host, a blank line after."""
        now = time.monotonic()
        width = min(max((len(v.name) for v in views), default=4), 24)
        if self.broken:
            return
        rows = [f"{'HOST':<{width}}  {'STATE':<12} {'AGE':>6}  GPUS  FREE  {'MEMORY GiB':>13}  UTIL  RUNS"]
        for v in views:
            rows.append(_row(v, width, now))
        try:
            self.out.write("\n".join(rows) + "\n\n")
            self.out.flush()
        except BrokenPipeError:
            self._broke()


def _row(v: HostView, width: int, now: float) -> str:
    name = strip_controls(v.name)[:width]
    age = v.gpu_age(now)
    head = f"{name:<{width}}  {v.state.value:<12} {age_text(age) if age is not None else '-':>6}  "
    g = v.gpus
    if v.state is not ConnState.UP or g is None or g.problem:
        why = error_of(v) or ("" if v.state is ConnState.UP else v.state.value)
        return head + strip_controls(why.splitlines()[0] if why else "")[:100]
    utils = [r.utilization_pct.value for r in g.readings if r.utilization_pct.value is not None]
    util = f"{sum(utils) / len(utils):3.0f}%" if utils else "   ?"
    memory = f"{g.used_mib / 1024:.1f}/{g.total_mib / 1024:.0f}"
    live = sum(1 for r in v.run_rows if r.state == "running")
    runs = f"{live} live" if live else "-"
    return head + f"{g.busy:>2}/{g.count:<2} {free_gpus(g) or 0:>4}  {memory:>13}  {util}  {runs}"


def _int(value: float | None) -> int | None:
    return None if value is None else int(value)
