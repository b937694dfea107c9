"""Prefixes and line hygiene: every era's record prefix, cloud exports, ANSI colours, tqdm rewrites."""

from __future__ import annotations

import pytest

from sgtui.core.logs.prefix import cloud_prefix, last_segment, split_prefix, strip_ansi


@pytest.mark.parametrize(
    ("line", "time", "ranks", "body"),
    [
        (
            "[2026-01-02 10:11:12 TP1] Load weight begin.",
            "2026-01-02 10:11:12",
            ("TP1",),
            "Load weight begin.",
        ),
        ("[2026-01-02 10:11:12.345 TP0] x", "2026-01-02 10:11:12.345", ("TP0",), "x"),
        ("[10:11:12 TP0] x", "10:11:12", ("TP0",), "x"),
        ("[2026-01-02 10:11:12] x", "2026-01-02 10:11:12", (), "x"),
        ("[2026-01-02 10:11:12 DP1 PP0 TP3 EP3] x", "2026-01-02 10:11:12", ("DP1", "PP0", "TP3", "EP3"), "x"),
        (
            "[2026-01-02 10:11:12 ATTN_CP1 MOE_DP0 TP2] x",
            "2026-01-02 10:11:12",
            ("ATTN_CP1", "MOE_DP0", "TP2"),
            "x",
        ),
        ("[gpu=0] Load weight begin.", None, ("gpu=0",), "Load weight begin."),
        ("[gpu_id=1] Init nccl begin.", None, ("gpu_id=1",), "Init nccl begin."),
        ("[rank3]: RuntimeError: NCCL error", None, ("rank3",), "RuntimeError: NCCL error"),
        (
            "Loading safetensors checkpoint shards: 45%",
            None,
            (),
            "Loading safetensors checkpoint shards: 45%",
        ),
    ],
)
def test_split_prefix_reads_time_ranks_and_body_of_every_era(
    line: str, time: str | None, ranks: tuple[str, ...], body: str
) -> None:
    assert split_prefix(line) == (time, ranks, body)


def test_a_bracketed_word_that_is_no_prefix_stays_in_the_body() -> None:
    line = "[Gloo] Rank 0 is connected to 0 peer ranks."
    assert split_prefix(line) == (None, (), line)


def test_cloud_logging_prefix_is_split_off_before_the_sglang_one() -> None:
    line = "ERROR 2025-04-05T00:01:19.209237575Z [2025-04-05 00:01:19 TP0] Scheduler hit an exception:"
    stamp, rest = cloud_prefix(line)  # type: ignore[misc]
    assert stamp == "2025-04-05T00:01:19.209237575Z"
    assert split_prefix(rest) == ("2025-04-05 00:01:19", ("TP0",), "Scheduler hit an exception:")


@pytest.mark.parametrize(
    ("line", "stamp"),
    [
        ("2025-11-06T02:10:00.703123456Z [2025-11-06 02:10:00] x", "2025-11-06T02:10:00.703123456Z"),
        ("[2025-11-06T02:10:00.703Z] [2025-11-06 02:10:00] x", "2025-11-06T02:10:00.703Z"),
    ],
)
def test_docker_and_collector_timestamps_are_split_off_too(line: str, stamp: str) -> None:
    assert cloud_prefix(line) == (stamp, "[2025-11-06 02:10:00] x")


def test_an_ordinary_info_line_is_not_mistaken_for_a_cloud_export() -> None:
    assert cloud_prefix("INFO:     Uvicorn running on http://0.0.0.0:30000") is None
    assert cloud_prefix("INFO 03-07 12:29:02 __init__.py:190] Automatically detected platform cuda.") is None
    assert cloud_prefix("[2025-11-06 02:10:00] x") is None


def test_ansi_colour_codes_are_stripped() -> None:
    assert strip_ansi("\x1b[32mINFO\x1b[0m: \x1b[1;31mready\x1b[0m") == "INFO: ready"


def test_a_carriage_return_rewritten_line_shows_its_last_non_empty_segment() -> None:
    assert last_segment("\r 10%|#| 1/10\r 20%|##| 2/10\r") == " 20%|##| 2/10"
    assert last_segment("plain") == "plain"
