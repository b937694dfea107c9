"""`launch --watch` across a host that goes away (real OpenSSH: the listener and every session killed):
it says so at once, resumes the log at the exact byte once the host is back, and when the host stays away
it gives up in bounded time, saying the server may still run and how to check."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from sgtui.commands.events import Printer
from sgtui.commands.watch import Watch
from sgtui.remote.connection import Connection
from sgtui.remote.runs import RunManager
from sgtui.remote.targets import Target
from tests.sshd import SSHD, SshdServer, _banner, _terminate

from .conftest import sshd_connection

pytestmark = pytest.mark.sshd

COUNTER = '#!/bin/bash\nfor i in $(seq 1 {n}); do echo "line $i"; sleep {pause}; done\nexit 1\n'


def host_goes_away(sshd: SshdServer) -> None:
    """Every SSH session and the listener die at once (the run itself, in its own session, lives on)."""
    for pid in sshd.connection_pids():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    _terminate(sshd.proc)


def host_comes_back(sshd: SshdServer) -> None:
    """The same sshd (same host key, same port) starts again."""
    sshd.proc = subprocess.Popen(
        [SSHD, "-D", "-e", "-f", str(sshd.dir / "sshd_config")],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 5
    while not _banner(sshd.host, sshd.port) and time.monotonic() < deadline:
        time.sleep(0.02)


def counting(sshd: SshdServer, tmp_path: Path, lines: int) -> tuple[Connection, RunManager, io.StringIO]:
    """A server that prints `lines` numbered lines 20 a second, then exits 1; a link that retries fast."""
    script = tmp_path / "counter"
    script.write_text(COUNTER.format(n=lines, pause=0.05))
    script.chmod(0o755)
    conn = sshd_connection(sshd, tmp_path, max_backoff=0.5)
    return conn, RunManager(conn, Target(), str(tmp_path / "runs")), io.StringIO()


def events(out: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


async def wait_event(out: io.StringIO, name: str, timeout: float) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [e for e in events(out) if e["event"] == name]
        if found:
            return found[0]
        await asyncio.sleep(0.05)
    raise AssertionError(f"no {name} event in {timeout} s: {out.getvalue()[-2000:]}")


async def test_a_lost_host_is_said_at_once_and_the_watch_resumes_at_the_exact_byte(
    sshd: SshdServer, tmp_path: Path
) -> None:
    conn, manager, out = counting(sshd, tmp_path, lines=120)
    try:
        record = await manager.launch([str(tmp_path / "counter")])
        watch = Watch(manager, record, Printer(json_events=True, out=out), None, give_up_after=60)
        fed: list[str] = []
        feed = watch.classifier.feed
        watch.classifier.feed = lambda text: fed.append(text) or feed(text)  # type: ignore[method-assign]
        running = asyncio.ensure_future(watch.run())
        log = Path(record.log_path)
        while watch.offset == 0:  # the watch has read some of the log
            await asyncio.sleep(0.05)
        host_goes_away(sshd)
        gone_at = time.monotonic()
        await wait_event(out, "connection_lost", 5)
        assert time.monotonic() - gone_at < 3  # at once, not after keepalives run out
        await asyncio.sleep(2)
        host_comes_back(sshd)
        back = await wait_event(out, "reconnected", 20)
        rc = await asyncio.wait_for(running, 60)
        assert rc == 1  # the counter exits 1 after its last line
        text = "".join(fed)
        assert text.splitlines() == log.read_text().splitlines()  # nothing lost, nothing twice
        assert 0 < int(back["offset"]) <= log.stat().st_size  # type: ignore[call-overload]
        human = [e["event"] for e in events(out)]
        assert human.index("connection_lost") < human.index("reconnected") < human.index("failed")
    finally:
        await conn.close()


async def test_a_host_that_stays_away_ends_the_watch_in_bounded_time_naming_the_checks(
    sshd: SshdServer, tmp_path: Path
) -> None:
    conn, manager, out = counting(sshd, tmp_path, lines=400)
    try:
        record = await manager.launch([str(tmp_path / "counter")])
        watch = Watch(manager, record, Printer(json_events=False, out=out), None, give_up_after=3)
        watch.place = "--profile demo.yaml"
        running = asyncio.ensure_future(watch.run())
        await asyncio.sleep(1)
        host_goes_away(sshd)
        rc = await asyncio.wait_for(running, 20)
        said = out.getvalue()
        assert rc == 1
        assert f"connection to {conn.host.name} lost; retrying (giving up after 3 s without it)" in said
        assert (
            f"gave up watching run {record.id}: no connection to {conn.host.name} for 3 s; the server may "
            f"still be running there: check with `sgtui runs --profile demo.yaml`" in said
        )
        assert f"stop it with `sgtui stop {record.id} --profile demo.yaml`" in said
        assert Path(record.log_path).stat().st_size > 0
    finally:
        host_comes_back(sshd)
        with contextlib.suppress(Exception):
            await manager.stop(record, grace=1)
        await conn.close()
