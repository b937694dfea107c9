"""What a host, a port or a config file says is bounded at every parser: deep JSON, huge numbers and loops
become one line (or "damaged"), never a RecursionError, a ValueError or a hang."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from sgtui.core.errors import UserError
from sgtui.core.shell import MARKER, parse_marker
from sgtui.remote.connection import ConnectionPool
from sgtui.remote.health import HttpState, model_name, parse_http_response
from sgtui.remote.hosts import HostConfig, HostsFileError, load_hosts
from sgtui.remote.run_records import parse_run_listing
from sgtui.remote.targets import Target

DEEP = "[" * 3000 + "]" * 3000
HUGE = "9" * 5000


@pytest.mark.parametrize("body", [DEEP, f'{{"a": {DEEP}}}', f'{{"rc": {HUGE}}}'])
def test_a_marker_line_with_deep_or_huge_json_is_no_result(body: str) -> None:
    """A result line is printed by a script on the host; a hostile one reads as no result at all."""
    assert parse_marker(f"{MARKER} {body}\n") is None


def test_whatever_answers_on_the_port_cannot_crash_the_health_check() -> None:
    deep = parse_http_response(b"HTTP/1.0 200 OK\r\n\r\n" + f'{{"model_path": {DEEP}}}'.encode())
    assert deep.state is HttpState.OK and model_name(deep.body) is None
    assert model_name(f'{{"model_path": "m", "n": {HUGE}}}') is None
    long_status = parse_http_response(b"HTTP/1.0 " + HUGE.encode() + b" OK\r\n\r\n")
    assert long_status.state is HttpState.ERROR and "not an HTTP answer" in long_status.detail


@pytest.mark.parametrize("body", [DEEP, f'{{"pid": {HUGE}}}'])
def test_a_run_record_with_deep_or_huge_json_is_listed_as_damaged(body: str) -> None:
    coded = base64.b64encode(body.encode()).decode()
    for line in (f"@@run.json {coded}", f"@@run.json= {body}"):
        listing = f"@@run 20260101-000000-abcdef\n@@owner root\n{line}\n"
        [record] = parse_run_listing(listing, "h", Target(), "/runs")
        assert record.foreign  # refused, with its reason, never a traceback


def test_a_proxy_jump_cycle_is_one_line_naming_the_chain() -> None:
    hosts = {
        "a": HostConfig("a", "10.0.0.1", proxy_jump="b", source="hosts.yaml"),
        "b": HostConfig("b", "10.0.0.2", proxy_jump="a", source="hosts.yaml"),
    }
    with pytest.raises(UserError, match=r"^hosts.yaml: the ProxyJump chain a -> b -> a loops back"):
        ConnectionPool(hosts).get("a")


def test_a_host_line_with_100000_names_is_refused_at_once(tmp_path: Path) -> None:
    cfg = tmp_path / "config"
    cfg.write_text("Host " + " ".join(f"h{i}" for i in range(100_000)) + "\n  HostName 10.0.0.1\n")
    with pytest.raises(HostsFileError, match=r"config:1: a Host line with 100,000 names"):
        load_hosts(cfg, hosts_yaml=False)
