"""Health: HTTP through the SSH connection (direct-tcpip), judged together with the process and the log."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from sgtui.remote.connection import Connection
from sgtui.remote.health import (
    MAX_RESPONSE,
    HttpProbe,
    HttpState,
    Verdict,
    first_ipv4,
    http_get,
    judge,
    parse_http_response,
    probe,
    service_address,
)
from sgtui.remote.runs import RunState, RunStatus
from sgtui.remote.targets import Target
from sgtui.sim.sshserver import SimSSHServer

from .conftest import SYSTEM_PATH, host_env, pinned_connection
from .fakes import install_fake_pct

RUNNING = RunStatus(RunState.RUNNING, None, 3)
DEAD = RunStatus(RunState.DEAD)


@pytest.fixture
async def http_port() -> AsyncIterator[int]:
    """A tiny HTTP server: /health 200, /get_model_info 404, /model_info with a model path."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = (await reader.readuntil(b"\r\n\r\n")).decode()
        path = request.split()[1]
        if path == "/health":
            status, body = "200 OK", ""
        elif path == "/model_info":
            status, body = "200 OK", '{"model_path": "/models/Qwen3.6-27B", "is_generation": true}'
        else:
            status, body = "404 Not Found", '{"detail":"Not Found"}'
        writer.write(f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\n\r\n{body}".encode())
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    yield server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()


async def test_a_serving_server_is_ready_with_its_model(conn: Connection, http_port: int) -> None:
    health = await probe(conn, http_port, process=RUNNING, log_phase="ready")
    assert health.verdict is Verdict.READY
    assert health.model == "/models/Qwen3.6-27B"


async def test_nothing_listening_while_the_process_lives_is_starting(conn: Connection) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    health = await probe(conn, free, process=RUNNING, log_phase="loading weights")
    assert health.http.state is HttpState.REFUSED
    assert health.verdict is Verdict.STARTING


def test_http_answering_after_the_run_died_is_flagged() -> None:
    ok = HttpProbe(HttpState.OK, 200)
    assert judge(ok, None, DEAD, "ready").verdict is Verdict.ORPHANED_HTTP
    assert judge(HttpProbe(HttpState.REFUSED), None, DEAD, None).verdict is Verdict.STOPPED


def test_a_live_process_whose_health_fails_after_ready_is_unhealthy() -> None:
    bad = HttpProbe(HttpState.ERROR, 503)
    assert judge(bad, None, RUNNING, "ready").verdict is Verdict.UNHEALTHY
    assert judge(HttpProbe(HttpState.TIMEOUT), None, RUNNING, "ready").verdict is Verdict.UNHEALTHY


def test_http_responses_parse_and_garbage_is_an_error() -> None:
    assert parse_http_response(b"HTTP/1.1 503 Service Unavailable\r\n\r\nx").status == 503
    assert parse_http_response(b"SSH-2.0-OpenSSH\r\n").state is HttpState.ERROR


async def test_a_pct_server_is_probed_at_the_containers_own_address(fake_bin: Path, tmp_path: Path) -> None:
    install_fake_pct(fake_bin, SYSTEM_PATH)
    server = await SimSSHServer(env=host_env(fake_bin)).start()
    conn = pinned_connection(server, tmp_path)
    try:
        assert await service_address(conn, Target()) == "127.0.0.1"
        address = await service_address(conn, Target("pct", "129"))
        local = subprocess.run(["hostname", "-I"], capture_output=True, text=True, check=False).stdout
        assert address == first_ipv4(local)
    finally:
        await conn.close()
        await server.close()


def test_the_first_non_loopback_ipv4_is_the_address() -> None:
    assert first_ipv4("127.0.0.1 fd00::2 10.1.2.3 10.9.9.9") == "10.1.2.3"
    assert first_ipv4("2: eth0    inet 192.168.1.7/24 brd") == "192.168.1.7"
    assert first_ipv4("nothing here") is None


async def test_an_endless_answer_on_the_port_is_cut_off_not_read_forever(conn: Connection) -> None:
    async def flood(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\n\r\n")
        try:
            while True:
                writer.write(b"x" * 65536)
                await writer.drain()
        except (ConnectionError, OSError):
            writer.close()

    server = await asyncio.start_server(flood, "127.0.0.1", 0)
    try:
        port = server.sockets[0].getsockname()[1]
        probe = await asyncio.wait_for(http_get(conn, port, "/health"), 20)
        assert probe.status == 200 and len(probe.body) <= MAX_RESPONSE + (1 << 20)
    finally:
        server.close()


async def test_a_host_that_forbids_port_forwarding_is_unknown_with_the_fix_not_forever_starting(
    fake_bin: Path, tmp_path: Path
) -> None:
    async with SimSSHServer(env=host_env(fake_bin), allow_tcp_forwarding=False) as server:
        conn = pinned_connection(server, tmp_path)
        try:
            health = await probe(conn, 30000, process=RUNNING, log_phase="loading")
        finally:
            await conn.close()
    assert health.verdict is Verdict.UNKNOWN and health.http.state is HttpState.UNREACHABLE
    assert "AllowTcpForwarding" in health.reason


async def test_the_model_info_endpoint_is_the_releases_own(conn: Connection, http_port: int) -> None:
    """0.5.6+ has /model_info (the old name logs a deprecation warning on every call): asked first; an
    older release only has /get_model_info, asked first there (here it is missing, so /model_info next)."""
    asked: dict[str, str] = {}
    health = await probe(conn, http_port, process=RUNNING, version="0.5.23", endpoints=asked)
    assert list(asked) == ["/health", "/model_info"] and health.model == "/models/Qwen3.6-27B"
    old: dict[str, str] = {}
    await probe(conn, http_port, process=RUNNING, version="0.5.5", endpoints=old)
    assert old == {"/health": "200", "/get_model_info": "404", "/model_info": "200"}


async def test_a_gzip_answer_is_inflated(conn: Connection) -> None:
    """SGLang's /metrics (prometheus_client's ASGI app) compresses when asked; the reader asks."""
    import gzip

    page = b"# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs 3.0\n" * 100

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = (await reader.readuntil(b"\r\n\r\n")).decode().lower()
        zipped = "accept-encoding: gzip" in request
        body = gzip.compress(page) if zipped else page
        head = b"HTTP/1.1 200 OK\r\n" + (b"Content-Encoding: gzip\r\n" if zipped else b"")
        writer.write(head + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        port = server.sockets[0].getsockname()[1]
        for ask in (True, False):
            got = await http_get(conn, port, "/metrics", gzip=ask)
            assert got.status == 200 and got.body == page.decode()
    finally:
        server.close()
