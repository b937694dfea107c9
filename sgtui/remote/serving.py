"""A ready server's serving numbers and its health, read through the SSH connection.

`ServingReader(conn, port, host)`: `scrape()` reads `/metrics` (direct-tcpip, as the health probe) and
returns the snapshot over the window since its previous scrape; `log_snapshot(manager, run)` reads the
same numbers from the last 256 KiB of the run's log when the server has no metrics; `smoke()` sends one
short real completion. `read_status(...)` is `sgtui status`'s whole answer: health with the process and
the log, every endpoint asked, the smoke request, and a snapshot (metrics, else the log).
"""

from __future__ import annotations

import shlex
import time
import zlib
from typing import TYPE_CHECKING

from sgtui.core.serving.derive import MetricsDeriver
from sgtui.core.serving.loglines import LogServingReader
from sgtui.core.serving.state import ServingSnapshot, ServingStatus, SmokeResult
from sgtui.remote.health import MAX_RESPONSE, Verdict, probe
from sgtui.remote.http_stream import HttpError, KeptConnection, post_json

if TYPE_CHECKING:
    from sgtui.remote.connection import Transport
    from sgtui.remote.runs import RunManager, RunRecord

LOG_TAIL = 256 << 10
SMOKE_PROMPT = "The capital of France is"


class ServingReader:
    """One server's `/metrics`, scraped as often as asked; keeps the previous page for rates."""

    def __init__(self, conn: Transport, port: int, host: str = "127.0.0.1", timeout: float = 5.0) -> None:
        self.conn = conn
        self.port = port
        self.host = host
        self.timeout = timeout
        self.deriver = MetricsDeriver()
        self.http = KeptConnection(conn, host, port, timeout)
        self.last_error: str | None = None
        self.last_status: str | None = None

    async def scrape(self) -> ServingSnapshot | None:
        """The snapshot since the last scrape; None when /metrics did not answer with a page (the reason
        in `last_error`: a 404 means the server runs without --enable-metrics)."""
        try:
            status, headers, body = await self.http.get("/metrics", {"Accept-Encoding": "gzip"})
        except HttpError as exc:
            self.last_status, self.last_error = "failed", f"/metrics: {exc}"
            return None
        self.last_status = str(status)
        if status != 200:
            self.last_error = (
                "no /metrics: the server runs without --enable-metrics"
                if status == 404
                else f"/metrics answered HTTP {status}"
            )
            return None
        try:
            if headers.get("content-encoding", "").lower() == "gzip":
                body = zlib.decompressobj(wbits=31).decompress(body, MAX_RESPONSE)
            snap = self.deriver.feed(body.decode("utf-8", "replace"), time.monotonic())
        except (ValueError, zlib.error) as exc:
            self.last_error = f"/metrics is not a Prometheus page: {exc}"
            return None
        self.last_error = None
        return snap

    def close(self) -> None:
        self.http.close()

    async def smoke(self, timeout: float = 30.0) -> SmokeResult:
        """One short completion on /generate: how long it took, or why it failed."""
        body = {"text": SMOKE_PROMPT, "sampling_params": {"max_new_tokens": 4, "temperature": 0}}
        start = time.monotonic()
        try:
            status, data = await post_json(self.conn, self.port, "/generate", body, host=self.host,
                                           timeout=timeout)  # fmt: skip
        except HttpError as exc:
            return SmokeResult(False, None, str(exc))
        seconds = time.monotonic() - start
        if status != 200:
            text = data[:200].decode("utf-8", "replace").strip()
            return SmokeResult(False, seconds, f"/generate answered HTTP {status} {text}".strip())
        return SmokeResult(True, seconds)


async def log_snapshot(conn: Transport, manager: RunManager, run: RunRecord) -> ServingSnapshot | None:
    """The serving numbers of the run's last batch lines (source "log"), aged by the log's mtime."""
    path = shlex.quote(run.log_path)
    script = f"date +%s; stat -c %Y -- {path}; tail -c {LOG_TAIL} -- {path}"
    result = await conn.run(manager.target.script(script), timeout=30)
    if result.rc != 0:
        return None
    now_s, mtime_s, text = ([*result.stdout.split("\n", 2), "", ""])[:3]
    reader = LogServingReader()
    snap = reader.feed(text.splitlines(), time.monotonic())
    if snap is None:
        return None
    try:
        age = max(0.0, float(now_s) - float(mtime_s))
    except ValueError:
        age = 0.0
    from dataclasses import replace

    return replace(snap, at=snap.at - age)


def argv_value(argv: list[str], flag: str) -> str | None:
    """`--flag V` or `--flag=V` in a recorded command line."""
    for i, word in enumerate(argv):
        if word == flag and i + 1 < len(argv):
            return argv[i + 1]
        if word.startswith(flag + "="):
            return word.split("=", 1)[1]
    return None


def python_of(argv: list[str]) -> str:
    """The run's interpreter: argv[0], or for `sglang serve` (0.5.23's preferred form: the console
    script) the `python` beside it in the same environment's bin/."""
    first = argv[0] if argv else ""
    head, _, name = first.rpartition("/")
    return f"{head}/python" if name == "sglang" and head else first


def run_port(argv: list[str]) -> int:
    value = argv_value(argv, "--port")
    return int(value) if value and value.isdigit() else 30000


def metrics_enabled(argv: list[str]) -> bool:
    return "--enable-metrics" in argv or argv_value(argv, "--enable-metrics") in ("true", "True", "1")


async def read_status(
    conn: Transport,
    manager: RunManager,
    run: RunRecord,
    *,
    address: str,
    version: str | None,
    window_s: float = 1.0,
) -> ServingStatus:
    """Health (process + HTTP), the endpoints asked, the smoke request after ready, and the serving
    numbers: two scrapes `window_s` apart with --enable-metrics, else the log's last batch lines.
    HTTP answering while the smoke request fails is "unhealthy"."""
    import asyncio

    port = run_port(run.argv)
    status = await manager.status(run)
    endpoints: dict[str, str] = {}
    health = await probe(conn, port, host=address, process=status, version=version, endpoints=endpoints)
    reader = ServingReader(conn, port, address)
    word, reason = health.verdict.value, health.reason
    smoke = metrics = None
    if health.verdict is Verdict.READY:
        smoke = await reader.smoke()
        endpoints["/generate"] = "200" if smoke.ok else (smoke.error or "failed")[:60]
        if not smoke.ok:
            word = "unhealthy"
            reason = f"HTTP answers but generation fails: {smoke.error}"
    if health.verdict in (Verdict.READY, Verdict.UNHEALTHY) and metrics_enabled(run.argv):
        await reader.scrape()
        await asyncio.sleep(window_s)
        metrics = await reader.scrape()
        endpoints["/metrics"] = reader.last_status or "?"
        reader.close()
    if metrics is None and status.state.value == "running":
        metrics = await log_snapshot(conn, manager, run)
    return ServingStatus(run.id, word, reason, endpoints, smoke, metrics)  # type: ignore[arg-type]
