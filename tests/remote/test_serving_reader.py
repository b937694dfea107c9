"""Reading a server's serving numbers through the SSH connection: the sim's SGLang HTTP side (the
stand-in's own `http_api`, with --enable-metrics) scraped over one kept direct-tcpip channel, counters
that move under streamed load, and a server without metrics saying so."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from sgtui.remote.connection import Connection
from sgtui.remote.loadgen import builtin_bench
from sgtui.remote.serving import ServingReader
from sgtui.sim.http_api import make_http_server
from tests.sim.simhost_process import free_port


@pytest.fixture
def served(request: pytest.FixtureRequest) -> Iterator[tuple[int, list[str]]]:
    """The stand-in's HTTP side on a free port; its access log lines kept."""
    lines: list[str] = []
    port = free_port()
    values = {"--enable-metrics": True, "--max-running-requests": 4} if request.param else {}
    server = make_http_server(port, lambda text, *rank: lines.append(text), "0.5.23", "/models/tiny", values)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield port, lines
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("served", [True], indirect=True)
async def test_metrics_over_one_kept_channel_move_under_load(
    conn: Connection, served: tuple[int, list[str]]
) -> None:
    port, lines = served
    reader = ServingReader(conn, port)
    first = await reader.scrape()
    assert first is not None and first.source == "metrics" and first.running == 0
    report = await builtin_bench(
        conn, port, "127.0.0.1", requests=8, concurrency=8, input_len=16, output_len=20
    )
    assert report.completed == 8 and report.ttft_ms.p50 is not None and report.itl_ms.p99 is not None
    after = await reader.scrape()
    assert after is not None and after.gen_tokens_per_s and after.gen_tokens_per_s > 0
    assert after.prompt_tokens_per_s and after.e2e_ms.p50 is not None  # the window saw the 8 requests
    metrics_lines = [line for line in lines if "GET /metrics" in line]
    clients = {line.split(" - ")[0] for line in metrics_lines}
    assert len(metrics_lines) == 2 and len(clients) == 1, metrics_lines  # one connection, kept
    assert any("Decode batch" in line for line in lines)  # SGLang's own serving lines under load
    reader.close()


@pytest.mark.parametrize("served", [False], indirect=True)
async def test_a_server_without_metrics_says_so(conn: Connection, served: tuple[int, list[str]]) -> None:
    port, _ = served
    reader = ServingReader(conn, port)
    assert await reader.scrape() is None
    assert reader.last_status == "404" and "--enable-metrics" in (reader.last_error or "")
    smoke = await reader.smoke()
    assert smoke.ok and smoke.seconds is not None
    reader.close()


def test_inter_token_latency_is_spread_over_each_chunks_tokens_as_bench_serving_does() -> None:
    """Events that came in one read are one chunk: its gap is shared by its tokens, never a 0 ms ITL."""
    from sgtui.remote.loadgen import chunk_itls

    assert chunk_itls([(0.0, 1), (0.01, 2), (0.04, 5)]) == pytest.approx((0.01, 0.01, 0.01, 0.01))
    assert chunk_itls([(0.0, 1)]) == () and chunk_itls([(0.0, 1), (0.5, 1)]) == ()


async def test_the_access_log_leaves_out_excluded_prefixes(conn: Connection) -> None:
    """SGLang's --uvicorn-access-log-exclude-prefixes /metrics keeps the 1 Hz poll out of the run's log;
    the stand-in does the same."""
    lines: list[str] = []
    port = free_port()
    values = {"--enable-metrics": True, "--uvicorn-access-log-exclude-prefixes": ["/metrics"]}
    server = make_http_server(port, lambda text, *rank: lines.append(text), "0.5.23", "/m", values)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        reader = ServingReader(conn, port)
        assert await reader.scrape() is not None
        assert (await reader.smoke()).ok
        assert not any("/metrics" in line for line in lines) and any("/generate" in line for line in lines)
        reader.close()
    finally:
        server.shutdown()
        server.server_close()
