"""Follow a log over one long-lived channel (`tail -c +OFFSET -F`), resuming by byte offset.

Only complete lines are counted and delivered, so after a lost connection the follow resumes at the first
byte not yet delivered: no line lost, none duplicated. Lines arrive in chunks (one list per read), because
per-line awaits and per-line widget writes are what make log views slow.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import asyncssh

from sgtui.remote.connection import AuthError, HostKeyError, RemoteError, Transport
from sgtui.remote.targets import HOST, Target


@dataclass(frozen=True)
class LogChunk:
    """Complete lines (without their newline) covering bytes [start, end) of the file."""

    lines: list[str]
    start: int
    end: int


BEGIN = b"@@sgtui-tail-begin\n"


def tail_script(path: str, offset: int) -> str:
    """The marker first: whatever a login shell's ~/.bashrc prints before it must not count as log bytes."""
    follow_cmd = f"exec tail -c +{int(offset) + 1} -F -- {shlex.quote(path)} 2>/dev/null"
    return f"printf '%s\\n' {BEGIN.decode().strip()}; {follow_cmd}"


def split_complete(buffer: bytes) -> tuple[bytes, bytes]:
    """(complete lines including the last newline, the trailing partial line)."""
    cut = buffer.rfind(b"\n")
    return (buffer[: cut + 1], buffer[cut + 1 :]) if cut >= 0 else (b"", buffer)


async def follow(
    conn: Transport,
    path: str,
    *,
    target: Target = HOST,
    offset: int = 0,
    read_size: int = 65536,
    backoff_start: float = 0.05,
    backoff_max: float = 2.0,
    on_reconnect: Callable[[int], None] | None = None,
) -> AsyncIterator[LogChunk]:
    """Yield chunks of new lines from `path` (inside `target`) starting at byte `offset`, forever.

    A lost channel or connection is retried with backoff from the last delivered byte; `on_reconnect`
    gets that offset. Stop by breaking out of the loop or cancelling the task.
    """
    delay = backoff_start
    first = True
    while True:
        if not first and on_reconnect is not None:
            on_reconnect(offset)
        first = False
        pending = b""
        begun = False
        try:
            async with conn.stream(target.script(tail_script(path, offset))) as stream:
                while True:
                    data = await stream.read(read_size)
                    if not data:
                        break
                    if not begun:
                        pending += data
                        at = pending.find(BEGIN)
                        if at < 0:
                            continue
                        begun, data, pending = True, pending[at + len(BEGIN) :], b""
                    complete, pending = split_complete(pending + data)
                    if not complete:
                        continue
                    delay = backoff_start  # only real log bytes prove the follow works (not our marker)
                    start = offset
                    offset += len(complete)
                    yield LogChunk(complete[:-1].decode("utf-8", "replace").split("\n"), start, offset)
        except (HostKeyError, AuthError):
            raise  # needs the user; retrying cannot help
        except (asyncssh.Error, OSError, RemoteError, asyncio.IncompleteReadError):
            pass
        await asyncio.sleep(delay)
        delay = min(delay * 2, backoff_max)


async def read_rest(
    conn: Transport, path: str, *, target: Target = HOST, offset: int = 0, max_bytes: int = 16 << 20
) -> LogChunk:
    """Everything after byte `offset`, including a last line without a newline: `follow` holds such a
    line back (more may come), so once the writer is gone this is how its final words are read.

    At most `max_bytes` are read; the chunk's `end` says where the next read should start.
    """
    script = (
        f"printf '%s\\n' {BEGIN.decode().strip()}; "
        f"tail -c +{int(offset) + 1} -- {shlex.quote(path)} 2>/dev/null | head -c {int(max_bytes)}"
    )
    parts = []
    async with conn.stream(target.script(script), long_lived=False) as stream:
        while chunk := await stream.read(65536):
            parts.append(chunk)
    data = b"".join(parts)
    at = data.find(BEGIN)
    if at < 0:
        raise RemoteError(f"{conn.host.name} {target.label}: cannot read {path}")
    body = data[at + len(BEGIN) :]
    if not body:
        return LogChunk([], offset, offset)
    text = body.decode("utf-8", "replace")
    lines = text[:-1].split("\n") if text.endswith("\n") else text.split("\n")
    return LogChunk(lines, offset, offset + len(body))
