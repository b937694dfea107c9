"""Local subprocesses end whole and leave no transport open: one left open is collected after the event
loop closed and raises there ("Event loop is closed", a warning in the next test that happens to run)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from sgtui.remote.hosts import HostConfig
from sgtui.remote.local import LocalTransport
from sgtui.remote.proxy import ProxyCommand
from sgtui.remote.transport import RemoteError


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")


async def _pid_from(path: Path) -> int:
    while not path.exists() or not path.read_text().strip():
        await asyncio.sleep(0.02)
    return int(path.read_text())


async def test_closing_a_pipeline_proxy_command_ends_its_whole_group_and_transport(tmp_path: Path) -> None:
    """`relay | cat` (what a ProxyCommand often is): the shell's children hold stderr open past the
    shell; closing ends the group, reads stderr to its end and closes the transport."""
    pidfile = tmp_path / "pid"
    command = f"sh -c 'echo $$ > {pidfile}; exec sleep 30' | cat"
    proxy = await ProxyCommand.start(HostConfig("gw", "127.0.0.1", 22, proxy_command=command))
    child = await _pid_from(pidfile)
    await asyncio.wait_for(proxy.close(), 30)
    transport = proxy.proc._transport  # type: ignore[attr-defined]
    assert transport is not None and transport.is_closing()
    assert _gone(child), "the pipeline's sleep outlived the proxy"


async def test_a_local_command_that_times_out_is_reaped_and_its_transport_closed() -> None:
    seen: list[asyncio.subprocess.Process] = []
    spawn = asyncio.create_subprocess_exec

    async def recording(*args: object, **kwargs: object) -> asyncio.subprocess.Process:
        proc = await spawn(*args, **kwargs)  # type: ignore[arg-type]
        seen.append(proc)
        return proc

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(asyncio, "create_subprocess_exec", recording)
        with pytest.raises(RemoteError, match="timed out"):
            await LocalTransport().run("exec sleep 30", timeout=0.5)
    (proc,) = seen
    assert proc.returncode is not None  # reaped, not left to the child watcher after the loop
    assert proc._transport.is_closing()  # type: ignore[attr-defined]
