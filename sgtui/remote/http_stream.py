"""HTTP POSTs to a server as seen from its host, through the SSH connection (a direct-tcpip channel, as
`health.http_get`: nothing opened on the jump box, no curl on the host): one JSON answer, or a streamed
one read event by event (SSE `data: ...` lines) with the time each arrived.

The request is HTTP/1.0, so the answer is close-delimited (uvicorn/h11 and http.server both answer an
HTTP/1.0 client so); a chunked answer is decoded all the same."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import asyncssh

from sgtui.remote.connection import RemoteError, Transport

MAX_EVENT = 1 << 20


class HttpError(Exception):
    """The request did not get a 200: why, in one line."""


async def _open(conn: Transport, host: str, port: int, timeout: float) -> tuple[Any, Any]:
    try:
        return await asyncio.wait_for(conn.open_connection(host, port), timeout)
    except TimeoutError:
        raise HttpError(f"connect to {host}:{port} timed out") from None
    except asyncssh.ChannelOpenError as exc:
        raise HttpError(f"{host}:{port}: {exc.reason}") from None
    except (RemoteError, asyncssh.Error, OSError) as exc:
        raise HttpError(f"{host}:{port}: {exc}") from None


def _request_bytes(method: str, path: str, host: str, port: int, body: dict[str, Any] | None) -> bytes:
    data = json.dumps(body).encode() if body is not None else b""
    head = (
        f"{method} {path} HTTP/1.0\r\nHost: {host}:{port}\r\nConnection: close\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
    )
    return head.encode("ascii") + data


async def _read_head(reader: Any, timeout: float) -> tuple[int, dict[str, str], bytes]:
    """Status, headers (lower-case names) and whatever body bytes came with them."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = await asyncio.wait_for(reader.read(65536), timeout)
        if not chunk:
            raise HttpError(f"the connection closed before an HTTP answer ({buf[:60]!r})")
        buf += chunk
        if len(buf) > MAX_EVENT:
            raise HttpError("no end of HTTP headers in 1 MiB: not our server")
    head, _, rest = buf.partition(b"\r\n\r\n")
    status, headers = _parse_head(head)
    return status, headers, rest


def _parse_head(head: bytes) -> tuple[int, dict[str, str]]:
    """The status line and headers (lower-case names) before the blank line."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split()
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise HttpError(f"not an HTTP answer: {lines[0][:80]!r}")
    headers = {n.strip().lower(): v.strip() for n, _, v in (line.partition(":") for line in lines[1:])}
    return int(parts[1]), headers


class _Body:
    """The body as it arrives: close-delimited, content-length or chunked."""

    def __init__(self, reader: Any, headers: dict[str, str], rest: bytes, timeout: float) -> None:
        self.reader = reader
        self.timeout = timeout
        self.chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        self.raw = rest
        self.done = False

    async def _more(self) -> bool:
        chunk = await asyncio.wait_for(self.reader.read(65536), self.timeout)
        if not chunk:
            return False
        self.raw += chunk
        return True

    async def read(self) -> bytes:
        """The next piece of body bytes; b"" at the end."""
        if self.done:
            return b""
        if not self.chunked:
            if not self.raw and not await self._more():
                self.done = True
                return b""
            out, self.raw = self.raw, b""
            return out
        while b"\r\n" not in self.raw:
            if not await self._more():
                self.done = True
                return b""
        size_line, _, rest = self.raw.partition(b"\r\n")
        size = int(size_line.split(b";")[0].strip() or b"0", 16)
        if size == 0:
            self.done = True
            return b""
        while len(rest) < size + 2:
            self.raw = size_line + b"\r\n" + rest
            if not await self._more():
                self.done = True
                return rest[:size]
            _, _, rest = self.raw.partition(b"\r\n")
        self.raw = rest[size + 2 :]
        return rest[:size]


async def post_json(
    conn: Transport, port: int, path: str, body: dict[str, Any], *, host: str = "127.0.0.1",
    timeout: float = 30.0,
) -> tuple[int, bytes]:  # fmt: skip
    """One POST; (status, whole body), HttpError when no answer came."""
    reader, writer = await _open(conn, host, port, timeout)
    try:
        writer.write(_request_bytes("POST", path, host, port, body))
        status, headers, rest = await _read_head(reader, timeout)
        stream = _Body(reader, headers, rest, timeout)
        data = b""
        while piece := await stream.read():
            data += piece
            if len(data) > 4 * MAX_EVENT:
                break
        return status, data
    except TimeoutError:
        raise HttpError(f"POST {path}: no answer in {timeout:g} s") from None
    except (asyncssh.Error, OSError) as exc:
        raise HttpError(f"POST {path}: {exc}") from None
    finally:
        with contextlib.suppress(Exception):
            writer.close()


async def stream_events(
    conn: Transport, port: int, path: str, body: dict[str, Any], *, host: str = "127.0.0.1",
    timeout: float = 60.0,
) -> AsyncIterator[tuple[float, Any]]:  # fmt: skip
    """POST with a streamed answer: (monotonic time it arrived, decoded JSON) per `data:` event, until
    `data: [DONE]` or the end. A non-200 answer raises HttpError with its status and first bytes."""
    reader, writer = await _open(conn, host, port, timeout)
    try:
        writer.write(_request_bytes("POST", path, host, port, body))
        status, headers, rest = await _read_head(reader, timeout)
        stream = _Body(reader, headers, rest, timeout)
        if status != 200:
            first = rest + await stream.read()
            raise HttpError(f"POST {path}: HTTP {status} {first[:200].decode('utf-8', 'replace').strip()}")
        pending = b""
        while piece := await stream.read():
            pending += piece
            at = time.monotonic()
            while b"\n\n" in pending:
                event, _, pending = pending.partition(b"\n\n")
                for line in event.split(b"\n"):
                    if not line.startswith(b"data:"):
                        continue
                    payload = line[5:].strip()
                    if payload == b"[DONE]":
                        return
                    with contextlib.suppress(json.JSONDecodeError):
                        yield at, json.loads(payload)
            if len(pending) > MAX_EVENT:
                raise HttpError(f"POST {path}: an event over 1 MiB")
    except TimeoutError:
        raise HttpError(f"POST {path}: nothing streamed for {timeout:g} s") from None
    except (asyncssh.Error, OSError) as exc:
        raise HttpError(f"POST {path}: {exc}") from None
    finally:
        with contextlib.suppress(Exception):
            writer.close()


class KeptConnection:
    """GETs over one kept HTTP/1.1 connection (one direct-tcpip channel for many requests: the 1 Hz
    `/metrics` poll opens no channel per scrape). Any failure closes it; the next GET opens a fresh one
    and a request that failed on a reused channel (the server closed it while idle) is retried once."""

    def __init__(self, conn: Transport, host: str, port: int, timeout: float = 5.0) -> None:
        self.conn = conn
        self.host = host
        self.port = port
        self.timeout = timeout
        self._rw: tuple[Any, Any] | None = None
        self._buf = b""

    async def get(
        self, path: str, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        """(status, headers, body); HttpError when no answer came."""
        for attempt in (0, 1):
            reused = self._rw is not None
            try:
                return await asyncio.wait_for(self._get(path, headers or {}), self.timeout)
            except (HttpError, TimeoutError, asyncssh.Error, OSError) as exc:
                self.close()
                if not reused or attempt:
                    raise HttpError(str(exc) or f"GET {path}: no answer in {self.timeout:g} s") from None
        raise HttpError(f"GET {path}: no answer")  # not reached

    async def _get(self, path: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        if self._rw is None:
            self._rw = await _open(self.conn, self.host, self.port, self.timeout)
            self._buf = b""
        reader, writer = self._rw
        extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        writer.write(f"GET {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n{extra}\r\n".encode("latin-1"))
        while b"\r\n\r\n" not in self._buf:
            await self._more(reader)
        head, _, self._buf = self._buf.partition(b"\r\n\r\n")
        status, got = _parse_head(head)
        if "content-length" in got:
            size = int(got["content-length"])
            while len(self._buf) < size:
                await self._more(reader)
            body, self._buf = self._buf[:size], self._buf[size:]
        elif "chunked" in got.get("transfer-encoding", "").lower():
            body = await self._chunks(reader)
        else:  # close-delimited: read to the end, and the connection is spent
            while await self._more(reader, eof_ok=True):
                pass
            body, self._buf = self._buf, b""
            self.close()
        if got.get("connection", "").lower() == "close":
            self.close()
        return status, got, body

    async def _chunks(self, reader: Any) -> bytes:
        body = b""
        while True:
            while b"\r\n" not in self._buf:
                await self._more(reader)
            size_line, _, self._buf = self._buf.partition(b"\r\n")
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            while len(self._buf) < size + 2:
                await self._more(reader)
            if size == 0:
                self._buf = self._buf.partition(b"\r\n")[2]  # the empty trailer
                return body
            body += self._buf[:size]
            self._buf = self._buf[size + 2 :]

    async def _more(self, reader: Any, eof_ok: bool = False) -> bool:
        chunk = await reader.read(65536)
        if not chunk:
            if eof_ok:
                return False
            raise HttpError("the connection closed mid-answer")
        self._buf += chunk
        if len(self._buf) > 8 * MAX_EVENT:
            raise HttpError("an answer over 8 MiB: not a /metrics page")
        return True

    def close(self) -> None:
        if self._rw is not None:
            with contextlib.suppress(Exception):
                self._rw[1].close()
        self._rw = None
        self._buf = b""
