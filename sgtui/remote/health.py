"""Is the server up? `/health` and the model info endpoint, asked through the SSH connection itself
(a direct-tcpip channel: nothing to install on the host, no port opened on the jump box), combined with
process liveness and the log's startup state - the HTTP server can outlive a dead scheduler, and a live
process can be minutes away from serving."""

from __future__ import annotations

import asyncio
import contextlib
import enum
import ipaddress
import json
import shlex
import zlib
from dataclasses import dataclass
from typing import Any

import asyncssh

from sgtui.core.sglang.windows import serving_rules
from sgtui.remote.connection import RemoteError, Transport
from sgtui.remote.runs import RunState, RunStatus
from sgtui.remote.targets import HOST, Target

MAX_RESPONSE = 4 << 20  # /health and the model info are tiny; more than this is not our server


class HttpState(enum.Enum):
    OK = "ok"  # 200
    ERROR = "error"  # answered with another status
    REFUSED = "refused"  # nothing listening
    TIMEOUT = "timeout"
    UNREACHABLE = "unreachable"  # the SSH connection itself failed


@dataclass(frozen=True)
class HttpProbe:
    state: HttpState
    status: int | None = None
    body: str = ""
    detail: str = ""


class Verdict(enum.Enum):
    READY = "ready"
    STARTING = "starting"
    UNHEALTHY = "unhealthy"  # process alive, HTTP answers with errors (or not at all after ready)
    ORPHANED_HTTP = "orphaned-http"  # HTTP answers but the run's process group is gone
    STOPPED = "stopped"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Health:
    verdict: Verdict
    http: HttpProbe
    model: str | None
    process: RunStatus | None
    log_phase: str | None
    reason: str


async def http_get(
    conn: Transport,
    port: int,
    path: str,
    *,
    host: str = "127.0.0.1",
    timeout: float = 5.0,
    gzip: bool = False,
) -> HttpProbe:
    """A plain HTTP/1.0 GET to host:port as seen from the remote machine. `gzip` asks for a compressed
    answer (SGLang's /metrics is prometheus_client's ASGI app, which compresses when asked: a 200 kB page
    crosses the SSH channel as ~20 kB) and inflates it."""
    try:
        reader, writer = await asyncio.wait_for(conn.open_connection(host, port), timeout)
    except TimeoutError:
        return HttpProbe(HttpState.TIMEOUT, detail=f"connect to {host}:{port} timed out")
    except asyncssh.ChannelOpenError as exc:
        if exc.code == asyncssh.OPEN_ADMINISTRATIVELY_PROHIBITED:
            return HttpProbe(
                HttpState.UNREACHABLE,
                detail=f"{conn.host.name} does not allow SSH port forwarding ({exc.reason}), which the "
                "health check uses: set `AllowTcpForwarding local` (or yes) for this user in its sshd_config",
            )
        return HttpProbe(HttpState.REFUSED, detail=f"{host}:{port}: {exc.reason}")
    except ConnectionRefusedError as exc:
        return HttpProbe(HttpState.REFUSED, detail=f"{host}:{port}: {exc}")
    except (RemoteError, asyncssh.Error, OSError) as exc:
        return HttpProbe(HttpState.UNREACHABLE, detail=str(exc))
    try:
        extra = "Accept-Encoding: gzip\r\n" if gzip else ""
        request = f"GET {path} HTTP/1.0\r\nHost: {host}:{port}\r\nConnection: close\r\n{extra}\r\n"
        writer.write(request.encode("ascii"))
        raw = await asyncio.wait_for(reader.read(1 << 20), timeout)
        chunks = [raw]
        size = len(raw)
        while raw and size < MAX_RESPONSE:  # whatever holds the port must not fill our memory
            raw = await asyncio.wait_for(reader.read(1 << 20), timeout)
            chunks.append(raw)
            size += len(raw)
    except TimeoutError:
        return HttpProbe(HttpState.TIMEOUT, detail=f"GET {path}: no answer in {timeout} s")
    except (asyncssh.Error, OSError) as exc:
        return HttpProbe(HttpState.REFUSED, detail=f"GET {path}: {exc}")
    finally:
        with contextlib.suppress(Exception):
            writer.close()
    return parse_http_response(b"".join(chunks))


def parse_http_response(data: bytes) -> HttpProbe:
    head, _, body = data.partition(b"\r\n\r\n")
    status_line = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = status_line.split()
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        return HttpProbe(HttpState.ERROR, detail=f"not an HTTP answer: {status_line[:80]!r}")
    status = int(parts[1])
    if b"\r\ncontent-encoding: gzip" in head.lower():
        inflate = zlib.decompressobj(wbits=31)
        body = inflate.decompress(body, MAX_RESPONSE)
    text = body.decode("utf-8", "replace")
    return HttpProbe(HttpState.OK if status == 200 else HttpState.ERROR, status, text, status_line)


def model_name(body: str) -> str | None:
    try:
        data: Any = json.loads(body)
    except json.JSONDecodeError:
        return None
    if isinstance(data, dict):
        for key in ("model_path", "served_model_name", "model"):
            if isinstance(data.get(key), str):
                return data[key]
    return None


def info_paths(version: str | None) -> tuple[str, str]:
    """The model info endpoint of `version` first, the other name second (`ServingRules`: /model_info
    from 0.5.6, where /get_model_info logs a deprecation warning on every call; only /get_model_info
    before). An unknown release is asked the current name first."""
    current = serving_rules(version).model_info_path
    other = "/get_model_info" if current == "/model_info" else "/model_info"
    return current, other


async def probe(
    conn: Transport,
    port: int,
    *,
    host: str = "127.0.0.1",
    process: RunStatus | None = None,
    log_phase: str | None = None,
    timeout: float = 5.0,
    version: str | None = None,
    endpoints: dict[str, str] | None = None,
) -> Health:
    """Probe /health, then the release's model info endpoint (the other name on a 404), and judge with
    the rest. `endpoints`, when given, gets each path asked and its answer ("200", "404", "timeout")."""
    http = await http_get(conn, port, "/health", host=host, timeout=timeout)
    if endpoints is not None:
        endpoints["/health"] = answer_word(http)
    model = None
    if http.state is HttpState.OK:
        first, other = info_paths(version)
        info = await http_get(conn, port, first, host=host, timeout=timeout)
        if endpoints is not None:
            endpoints[first] = answer_word(info)
        if info.status == 404:
            info = await http_get(conn, port, other, host=host, timeout=timeout)
            if endpoints is not None:
                endpoints[other] = answer_word(info)
        model = model_name(info.body) if info.state is HttpState.OK else None
    return judge(http, model, process, log_phase)


def answer_word(http: HttpProbe) -> str:
    """How an endpoint answered, in one word: its status code, or refused / timeout / unreachable."""
    return str(http.status) if http.status is not None else http.state.value


def judge(http: HttpProbe, model: str | None, process: RunStatus | None, log_phase: str | None) -> Health:
    """Combine the three views; the disagreements are the interesting cases."""
    alive = process is None or process.state is RunState.RUNNING
    if process is not None and not alive:
        if http.state is HttpState.OK:
            return Health(
                Verdict.ORPHANED_HTTP,
                http,
                model,
                process,
                log_phase,
                "HTTP answers but the run's processes are gone: another server holds the port",
            )
        return Health(Verdict.STOPPED, http, model, process, log_phase, f"process {process.state.value}")
    if http.state is HttpState.OK:
        return Health(Verdict.READY, http, model, process, log_phase, "health check passed")
    if http.state is HttpState.UNREACHABLE:
        return Health(Verdict.UNKNOWN, http, model, process, log_phase, http.detail)
    if log_phase == "ready" or http.state is HttpState.ERROR:
        return Health(
            Verdict.UNHEALTHY,
            http,
            model,
            process,
            log_phase,
            f"server process alive but /health failed ({http.detail or http.state.value}); "
            "the scheduler may have died",
        )
    return Health(Verdict.STARTING, http, model, process, log_phase, f"not serving yet ({http.state.value})")


def first_ipv4(text: str) -> str | None:
    for word in text.split():
        try:
            addr = ipaddress.ip_address(word.split("/")[0])
        except ValueError:
            continue
        if addr.version == 4 and not addr.is_loopback:
            return str(addr)
    return None


async def service_address(conn: Transport, target: Target) -> str:
    """Where a server in `target` listens, as seen from its host: loopback for the host itself, the
    container's own address for pct (its own network namespace), the container IP for Docker (loopback
    when it uses the host network)."""
    if target.kind == "host":
        return "127.0.0.1"
    if target.kind == "pct":
        script = "hostname -I 2>/dev/null || ip -4 -o addr show scope global"
        result = await conn.run(target.script(script), timeout=30)
    else:
        fmt = "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}"
        script = f"docker inspect -f {shlex.quote(fmt)} -- {shlex.quote(str(target.id))}"
        result = await conn.run(HOST.script(script), timeout=30)
        if result.rc == 0 and not result.stdout.strip():
            return "127.0.0.1"
    address = first_ipv4(result.stdout)
    if address is None:
        raise RemoteError(
            f"{conn.host.name} {target.label}: cannot find its network address "
            f"({(result.stderr or result.stdout).strip()[-200:] or f'exit {result.rc}'})"
        )
    return address
