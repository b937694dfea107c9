"""What a stop would hit (`StopPreview`, read before asking) and what it did (`StopResult`: its steps
with their times, what it left behind), as read back from the target's stop and preview scripts (which
run_stopper.py's `RunStopper` runs)."""

from __future__ import annotations

import base64
import binascii
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sgtui.core import runscripts
from sgtui.core.ages import age_words
from sgtui.core.shell import BASH

if TYPE_CHECKING:
    from sgtui.remote.run_records import RunRecord


def int_value(value: Any) -> int | None:
    """An int read back from a target (never a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _float(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True)
class LeftProcess:
    """A process of a run still alive outside its process group after a stop."""

    pid: int
    uid: int | None
    why: str  # "session": same session id; "marker": carries the run's SGTUI_RUN_ID
    cmd: str

    def describe(self) -> str:
        how = "in the run's session" if self.why == "session" else "carries the run's SGTUI_RUN_ID"
        return f"pid {self.pid} ({how}): {self.cmd.strip()[:120] or '?'}"


STEP_WORDS = {
    "term-main": "TERM to the server's main process{pid}",
    "main-exited": "its main process ended{pid}",
    "term-group": "TERM to the process group",
    "kill": "KILL to the process group",
    "gone": "nothing of the group left",
}


@dataclass(frozen=True)
class StopStep:
    """One step of a stop, `seconds` after its first signal: term-main, main-exited, term-group, kill,
    gone (`pid`: the main process, for the first two)."""

    what: str
    seconds: float
    pid: int | None = None

    def text(self) -> str:
        words = STEP_WORDS.get(self.what, self.what).format(pid=f" (pid {self.pid})" if self.pid else "")
        return f"{self.seconds:5.1f} s  {words}"


@dataclass(frozen=True)
class StopResult:
    result: str  # "stopped" | "not-running" | "survivors"
    signal: str | None  # the last signal sent: "TERM" or "KILL"
    members: int  # processes still alive in the group at the end (0 unless "survivors")
    seconds: float
    left: tuple[LeftProcess, ...] = ()  # the run's processes alive outside its group
    steps: tuple[StopStep, ...] = ()  # what the stop did, with the time of each step

    @property
    def clean(self) -> bool:
        """Nothing of the run is left: the group is gone and no process left it."""
        return self.result != "survivors" and not self.left

    @property
    def graceful(self) -> bool:
        """The server ended on the TERM to its main process (SGLang drained and stopped its children)."""
        whats = [s.what for s in self.steps]
        return "main-exited" in whats and "term-group" not in whats and "kill" not in whats

    def summary(self) -> str:
        """The steps in one line: "TERM to main 0.0 s, main ended 3.4 s, all gone 3.5 s"."""
        short = {
            "term-main": "TERM to main",
            "main-exited": "main ended",
            "term-group": "TERM to group",
            "kill": "KILL",
            "gone": "all gone",
        }
        return ", ".join(f"{short.get(s.what, s.what)} {s.seconds:.1f} s" for s in self.steps)

    def step_lines(self) -> list[str]:
        """One plain line per step, with its time: what `sgtui stop`, the TUI and the notes print."""
        return [step.text() for step in self.steps]


def steps_from_marker(marker: Mapping[str, Any]) -> tuple[StopStep, ...]:
    out = []
    for item in marker.get("steps") or []:
        if isinstance(item, list) and len(item) == 3 and isinstance(item[0], str):
            ms = int_value(item[1])
            if ms is not None and item[0] in STEP_WORDS:
                out.append(StopStep(item[0], max(ms, 0) / 1000, int_value(item[2])))
    return tuple(out)


@dataclass(frozen=True)
class StopPreview:
    """What a stop of `run` would signal, read from the target just before asking."""

    run_id: str
    pgid: int
    alive: bool
    owner: str | None  # "user (uid N)" of the group leader
    age_s: float | None
    leader_argv: list[str] | None  # /proc/PGID/cmdline
    recorded_argv: list[str]
    log_path: str
    members: int
    outside: int  # processes of the run outside its group (setsid'd children)
    warning: str | None

    def lines(self) -> list[str]:
        """Plain text lines (never markup) for a confirmation."""
        if not self.alive:
            out = [f"process group {self.pgid}: no longer running; nothing would be signalled"]
        else:
            leader = self.leader_argv or []
            shown = (
                f"sgtui's runner for {self.log_path}, running {_clip(shlex.join(leader[6:]))}"
                if self.warning is None and len(leader) > 6
                else _clip(shlex.join(leader))
            )
            out = [
                f"process group {self.pgid}: {self.members} process(es), owner {self.owner or '?'}, "
                f"running for {age_words(self.age_s)}",
                f"leader: {shown}",
                f"recorded: {_clip(shlex.join(self.recorded_argv))}",
            ]
        if self.outside:
            out.append(f"{self.outside} process(es) of this run left its group: a stop will not reach them")
        if self.warning:
            out.append(f"WARNING: {self.warning}")
        return out

    def text(self) -> str:
        return "\n".join(self.lines())


def _clip(text: str, limit: int = 600) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def expected_leader(log_path: str, argv: Sequence[str]) -> list[str]:
    """The group leader's command line for a run launched by this sgtui: the runner bash with the
    run's log and its argv (the runner's own script text may differ between sgtui versions)."""
    return [*BASH, "-c", runscripts.RUNNER, log_path, *argv]


def preview_from_marker(run: RunRecord, marker: Mapping[str, Any]) -> StopPreview:
    outside = int_value(marker.get("outside")) or 0
    if not marker.get("alive"):
        return StopPreview(
            run.id, run.pgid, False, None, None, None, run.argv, run.log_path, 0, outside, None
        )
    try:
        raw = base64.b64decode(str(marker.get("cmdline", "")), validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    leader = [p.decode("utf-8", "replace") for p in raw.split(b"\0")[:-1]] if raw else []
    expected = expected_leader(run.log_path, run.argv)
    warning = None
    if leader[:4] != expected[:4] or leader[5:] != expected[5:]:
        warning = (
            f"the group leader's command line is not the one recorded for {run.id}: this may not be the "
            "run you mean to stop"
        )
    uptime, hz, start = (
        _float(marker.get("uptime")),
        int_value(marker.get("hz")) or 100,
        int_value(marker.get("start")),
    )
    age = uptime - start / hz if uptime is not None and start is not None else None
    uid, user = marker.get("uid"), str(marker.get("user") or "")
    owner = f"{user or '?'} (uid {uid})" if uid is not None else None
    members = int_value(marker.get("members")) or 0
    return StopPreview(
        run.id, run.pgid, True, owner, age, leader, run.argv, run.log_path, members, outside, warning
    )


def left_from_marker(marker: Mapping[str, Any]) -> tuple[LeftProcess, ...]:
    out = []
    for item in marker.get("left") or []:
        if isinstance(item, dict) and int_value(item.get("pid")) is not None:
            out.append(
                LeftProcess(
                    item["pid"], int_value(item.get("uid")), str(item.get("why")), str(item.get("cmd"))
                )
            )
    return tuple(out)
