"""The UI's adapter over sgtui.remote: how readings, run states and connection events are shown."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from sgtui.core.nvsmi import GpuProcess, GpuReading, GpuState, Value
from sgtui.remote.connection import ConnectionEvent, ConnState
from sgtui.remote.runs import RunState, RunStatus
from sgtui.remote.tail import LogChunk
from sgtui.ui import remote_backend
from sgtui.ui.launcher import open_profile
from sgtui.ui.remote_backend import RemoteBackend
from sgtui.ui.remote_views import gpu_views, holder_text, run_state_name
from sgtui.ui.views import RunView
from sgtui.ui.widgets.gpu_panel import holders_text


def test_gpu_readings_become_views_with_their_holders_and_named_problems() -> None:
    readings = [
        GpuReading(0, "u0", "NVIDIA RTX A6000", Value(31000.0), Value(49140.0), Value(87.0)),
        GpuReading(
            1,
            "u1",
            "NVIDIA RTX A6000",
            Value(None, "N/A"),
            Value(49140.0),
            Value(None, "N/A"),
            GpuState.PARTIAL,
        ),
    ]
    procs = [GpuProcess(4242, "/opt/sglang/venv/bin/python", Value(30500.0), "u0", 0, "pct 129")]
    views = gpu_views(readings, procs)
    assert (views[0].used_mib, views[0].total_mib, views[0].util_pct) == (31000, 49140, 87)
    assert views[0].processes[0].name == "python" and views[0].processes[0].container == "pct 129"
    assert views[1].note == "N/A" and views[1].util_pct is None and views[1].processes == ()


def test_a_process_whose_memory_nvidia_smi_cannot_read_is_shown_as_unknown_not_zero() -> None:
    reading = GpuReading(0, "u0", "NVIDIA RTX A6000", Value(31000.0), Value(49140.0), Value(87.0))
    procs = [
        GpuProcess(4242, "/opt/sglang/venv/bin/python", Value(None, "N/A"), "u0", 0, "pct 129"),
        GpuProcess(4343, "/usr/bin/python3", Value(512.0), "u0", 0, None),
    ]
    views = gpu_views([reading], procs)
    assert [p.used_mib for p in views[0].processes] == [None, 512]
    assert holders_text(views).plain == "holders: 0:python[4242]@pct 129 N/A, 0:python3[4343] 0.5G"
    assert holder_text(procs[0]) == "python[4242] ? MiB (N/A)"
    assert holder_text(procs[1]) == "python3[4343] 512 MiB"


@pytest.mark.parametrize(
    ("status", "shown"),
    [
        (RunStatus(RunState.RUNNING, None, 3), "running"),
        (RunStatus(RunState.EXITED, 0), "exited"),
        (RunStatus(RunState.EXITED, 1), "failed"),
        (RunStatus(RunState.STOPPED, 143), "stopped"),  # a stop by sgtui recorded itself
        (RunStatus(RunState.DEAD), "dead"),  # gone with no exit code and no recorded stop
        (RunStatus(RunState.PID_REUSED), "dead"),
    ],
)
def test_run_states_are_named_for_the_runs_table(status: RunStatus, shown: str) -> None:
    assert run_state_name(status) == shown


class FakeTransport:
    """Connects at once, then replays the events the test pushes."""

    def __init__(self) -> None:
        self.sinks: list[asyncio.Queue[ConnectionEvent]] = []

    def subscribe(self, sink: asyncio.Queue[ConnectionEvent]) -> Any:
        self.sinks.append(sink)
        return lambda: self.sinks.remove(sink)

    async def connect(self) -> FakeTransport:
        return self

    def emit(self, state: ConnState, message: str = "", retry_in: float | None = None) -> None:
        for sink in self.sinks:
            sink.put_nowait(ConnectionEvent("pve", state, message, retry_in))


async def test_connection_events_become_the_states_the_picker_shows() -> None:
    backend = RemoteBackend({})
    transport = FakeTransport()
    backend.pool.get = lambda name: transport  # type: ignore[method-assign]
    states = backend.connection_states("pve")
    assert await anext(states) == ("connecting", "")
    assert await anext(states) == ("connected", "")
    transport.emit(ConnState.RETRYING, "connection reset", retry_in=2.0)
    assert await anext(states) == ("lost", "connection reset (retry in 2 s)")
    transport.emit(ConnState.HOST_KEY_CHANGED, "host key changed for pve")
    assert await anext(states) == ("failed", "host key changed for pve")
    transport.emit(ConnState.UP)
    assert await anext(states) == ("connected", "")
    await states.aclose()
    assert transport.sinks == []


def test_a_missing_profile_file_is_a_clear_user_error(tmp_path: Path) -> None:
    from sgtui.core.errors import UserError

    with pytest.raises(UserError, match=r"nope\.yaml: no such profile file"):
        open_profile(tmp_path / "nope.yaml")


def test_without_profiles_the_app_opens_an_empty_one_for_the_given_host() -> None:
    profile, path = open_profile(None, host="gpu1")
    assert path is None and profile.host == "gpu1" and profile.sglang == {}


class LogFileManager:
    """A RunManager over a finished log held in memory: `tail` delivers complete lines then waits for
    more (as `follow` does), `read_rest` returns everything after an offset, a last partial line too."""

    def __init__(self, log: bytes) -> None:
        self.log = log
        self.rest_offsets: list[int] = []

    async def tail(self, record: Any, offset: int) -> AsyncIterator[LogChunk]:
        complete = self.log[: self.log.rfind(b"\n") + 1]
        if len(complete) > offset:
            yield LogChunk(complete[offset:].decode().splitlines(), offset, len(complete))
        await asyncio.Event().wait()

    async def status(self, record: Any) -> RunStatus:
        return RunStatus(RunState.EXITED, 1)

    async def read_rest(self, record: Any, offset: int) -> LogChunk:
        self.rest_offsets.append(offset)
        body = self.log[offset:]
        return LogChunk(body.decode().splitlines(), offset, offset + len(body))


@pytest.mark.parametrize(
    ("log", "expected"),
    [
        (b"a\nb\nKilled mid-wr", [(4, ["a", "b"]), (17, ["Killed mid-wr"])]),
        (b"a\nb\n", [(4, ["a", "b"])]),
        (b"half a line", [(11, ["half a line"])]),
    ],
    ids=["partial-last-line", "ends-with-newline", "only-a-partial-line"],
)
async def test_the_tail_of_an_ended_run_shows_its_last_line_without_a_newline_once(
    log: bytes, expected: list[tuple[int, list[str]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(remote_backend, "STATUS_POLL_S", 0.01)
    backend = RemoteBackend({})
    manager = LogFileManager(log)
    backend._manager = lambda host, target: manager  # type: ignore[assignment,method-assign,return-value]
    run = RunView("r1", "pve", "pct 129", "p", "failed", raw=SimpleNamespace(target=None))
    got = [chunk async for chunk in backend.tail(run, 0)]
    assert got == expected
    assert manager.rest_offsets[0] == (4 if log.startswith(b"a\n") else 0)  # from the last delivered line


def test_the_runs_dir_is_the_backends_then_the_profiles_then_the_hosts_then_the_users_default() -> None:
    from sgtui.remote.hosts import HostConfig
    from sgtui.remote.targets import Target
    from sgtui.ui.remote_backend import RemoteBackend

    hosts = {"h": HostConfig("h", "10.0.0.5", runs_dir="/from/hosts"), "d": HostConfig("d", "10.0.0.6")}
    backend = RemoteBackend(hosts, user_known_hosts=None)
    assert backend._manager("h", Target()).runs_dir == "/from/hosts"
    assert backend._manager("h", Target(), "/from/profile").runs_dir == "/from/profile"
    assert backend._manager("d", Target()).runs_dir is None  # resolved on the target, per user
    own = RemoteBackend(hosts, runs_dir="/own", user_known_hosts=None)
    assert own._manager("h", Target(), "/from/profile").runs_dir == "/own"
