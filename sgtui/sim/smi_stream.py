"""The sim's `nvidia-smi --query-gpu=... -lms N` loops, served by the SSH server's own event loop.

sgtui samples every host over one long-lived `bash --norc --noprofile -c 'exec nvidia-smi ... -lms N
2>&1'` channel. Run as a process, the sim's fake nvidia-smi costs about 12 MiB and 2 ms of CPU a second
per streamed host (a Python interpreter each), which at 500 simulated hosts is 6 GiB and a whole core on
the machine that also runs the client under test. A `SimHost` therefore answers exactly that command
itself: the same query code (`nvidia_smi.query_gpus`) on the same state file, each interval, and the
loop ends when the channel goes, as the real loop dies at its next write. Anything else (another shape
of command, a bad field, `nvidia-smi` replaced on the host's PATH) goes to bash as before.

While no process holds GPU memory the output depends on the state file only, so it is re-made only
when the file changed (its mtime and size); with holders, the state is settled each time as the process
would (`StateStore.refresh`).
"""

from __future__ import annotations

import asyncio
import os
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from sgtui.sim.nvidia_smi import UsageError, _parse, query_gpus
from sgtui.sim.state import StateStore

BASH = ["bash", "--norc", "--noprofile", "-c"]


@dataclass(frozen=True)
class SmiLoop:
    fields: list[str]
    fmt: set[str]
    ids: str | None
    interval: float


def loop_request(command: str) -> SmiLoop | None:
    """The query loop `command` asks for, when it is exactly sgtui's sampling command; else None."""
    try:
        argv = shlex.split(command)
        if argv[:4] != BASH or len(argv) != 5:
            return None
        words = shlex.split(argv[4])
    except ValueError:
        return None
    if words[:2] == ["exec", "nvidia-smi"]:
        words = words[2:]
    else:
        return None
    if words[-1:] == ["2>&1"]:
        words = words[:-1]
    if any(w in ("|", ";", "&&", "||", "&") or w.startswith((">", "<")) for w in words):
        return None
    try:
        opts = _parse(words)
    except UsageError:
        return None
    fmt = set(opts.get("format", "").split(",")) - {""}
    if "query-gpu" not in opts or "csv" not in fmt:
        return None
    try:
        if "loop-ms" in opts:
            interval = max(int(opts["loop-ms"]), 1) / 1000
        elif "loop" in opts:
            interval = max(float(opts["loop"]), 0.001)
        else:
            return None
    except ValueError:
        return None
    return SmiLoop(opts["query-gpu"].split(","), fmt, opts.get("id"), interval)


class SmiStreams:
    """A host's in-process nvidia-smi loops: `handler(command)` -> a coroutine function or None."""

    def __init__(self, state_dir: Path) -> None:
        self.store = StateStore(state_dir)
        self.fake = state_dir / "bin" / "nvidia-smi"
        self._fake_text = self.fake.read_bytes() if self.fake.is_file() else None

    def handler(
        self, command: str
    ) -> Callable[[Callable[[bytes], None], Callable[[], bool]], Awaitable[int]] | None:
        if "nvidia-smi" not in command:
            return None
        loop = loop_request(command)
        if loop is None or not self._fake_unchanged():
            return None
        return lambda write, is_open: self.serve(loop, write, is_open)

    def _fake_unchanged(self) -> bool:
        try:
            return self._fake_text is not None and self.fake.read_bytes() == self._fake_text
        except OSError:
            return False

    async def serve(self, loop: SmiLoop, write: Callable[[bytes], None], is_open: Callable[[], bool]) -> int:
        """Write a sample every interval while the channel is open; 2 (and nvidia-smi's message) for a
        field it does not know."""
        key: tuple[int, int] | None = None
        out = b""
        loop_clock = asyncio.get_running_loop().time
        due = loop_clock()
        while is_open():
            try:
                st = os.stat(self.store.path)
                now_key = (st.st_mtime_ns, st.st_size)
                if now_key != key:
                    state = self.store.read()
                    if state.get("procs"):
                        state, now_key = self.store.refresh(), (0, 0)  # holders settle; never cached
                    lines = query_gpus(state, loop.fields, loop.fmt, loop.ids)
                    out = "".join(line + "\n" for line in lines).encode()
                    key = now_key
            except UsageError as exc:
                write(f"{exc}\n".encode())
                return 2
            write(out)
            # on a fixed beat, as nvidia-smi keeps its own: a busy sim process must not stretch the period
            due = max(due + loop.interval, loop_clock())
            await asyncio.sleep(due - loop_clock())
        return 0
