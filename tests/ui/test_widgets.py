"""The widgets' rendering and bookkeeping, without an app where none is needed."""

from __future__ import annotations

from typing import Any

import pytest
from textual.app import App, ComposeResult

from sgtui.ui.app import pick_theme
from sgtui.ui.follow import Coalescer
from sgtui.ui.logtext import clean_line, strip_ansi
from sgtui.ui.views import DiagnosisView, Milestone, SuggestionView, TimelineView
from sgtui.ui.widgets.diagnosis import diagnosis_text, first_applicable, without_first
from sgtui.ui.widgets.fit_panel import fit_text
from sgtui.ui.widgets.gpu_sparkline import BARS, bar_for, sparkline_text
from sgtui.ui.widgets.launch_form import FlagInfo, parse_value
from sgtui.ui.widgets.run_log import MAX_LINE, RunLog, line_kind
from sgtui.ui.widgets.timeline import elapsed, timeline_text


def test_the_sparkline_scale_is_the_card_total_not_the_data_range() -> None:
    assert bar_for(24_000, 48_000) == BARS[4]
    assert bar_for(47_000, 48_000) == BARS[8]
    line = sparkline_text([24_000, 24_100, 24_200], 48_000, 3).plain
    assert set(line) == {BARS[4]}  # Textual's Sparkline would draw these as low, middle, full


def test_the_sparkline_shows_any_use_and_caps_at_full() -> None:
    assert bar_for(1, 48_000) == BARS[1]
    assert bar_for(0, 48_000) == " "
    assert bar_for(60_000, 48_000) == BARS[-1]


def test_the_sparkline_right_aligns_the_newest_samples() -> None:
    assert sparkline_text([48_000], 48_000, 4).plain == "   " + BARS[-1]
    assert sparkline_text([0, 48_000, 48_000, 48_000, 48_000], 48_000, 2).plain == BARS[-1] * 2


def test_ansi_colours_and_carriage_return_rewrites_are_cleaned() -> None:
    assert strip_ansi("\x1b[31mERROR\x1b[0m boom") == "ERROR boom"
    assert clean_line("Loading  10%|#\rLoading 100%|##########") == "Loading 100%|##########"
    assert clean_line("plain") == "plain"


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.", "error"),
        ("Received sigquit from a child process.", "error"),
        ("[2026-01-01 10:00:00 TP0] Load weight end. elapsed=85.10 s, mem usage=25.89 GB", "milestone"),
        ("The server is fired up and ready to roll!", "milestone"),
        ("WARNING: something odd", "warning"),
        ("[2026-01-01 10:00:00] INFO: fine", "plain"),
    ],
)
def test_log_lines_are_classified_for_highlighting(line: str, kind: str) -> None:
    assert line_kind(line) == kind


def test_highlighting_only_looks_at_the_start_of_a_very_long_line() -> None:
    assert line_kind("x" * 10_000 + " Error") == "plain"


def test_the_coalescer_drops_the_oldest_lines_of_a_flood_and_counts_them() -> None:
    batch = Coalescer(cap=3)
    batch.add(["1", "2"])
    batch.add(["3", "4", "5"])
    assert batch.take(1.0) == (["3", "4", "5"], 2)
    assert batch.take(2.0) == ([], 0)


class LogApp(App[None]):
    def compose(self) -> ComposeResult:
        yield RunLog(max_lines=100)


async def test_the_log_keeps_at_most_max_lines_and_clips_huge_lines() -> None:
    app = LogApp()
    async with app.run_test(size=(80, 10)):
        log = app.query_one(RunLog)
        for i in range(10):
            log.append([f"line {i * 50 + j}" for j in range(50)])
        log.append(["y" * (MAX_LINE + 500)])
        assert log.line_count <= 100
        assert log.total_lines == 501
        assert log.lines[-1].endswith("[500 more chars]")


async def test_the_filter_hides_and_restores_lines_including_later_ones() -> None:
    app = LogApp()
    async with app.run_test(size=(80, 10)):
        log = app.query_one(RunLog)
        log.append(["alpha", "Beta error", "gamma"])
        assert log.set_filter("BETA") == 1
        log.append(["more beta", "delta"])
        assert list(log.lines) == ["Beta error", "more beta"]
        assert log.set_filter("") == 5


def test_field_values_are_typed_and_bad_ones_say_why() -> None:
    assert parse_value(FlagInfo("--port", kind="int"), "30001") == 30001
    assert parse_value(FlagInfo("--x", kind="float"), " 0.9 ") == 0.9
    assert parse_value(FlagInfo("--cuda-graph-bs", kind="int", multi=True), "1 2 4") == [1, 2, 4]
    assert parse_value(FlagInfo("--port", kind="int"), "") is None
    with pytest.raises(ValueError, match="whole number"):
        parse_value(FlagInfo("--port", kind="int"), "3e4x")
    with pytest.raises(ValueError, match="not one of"):
        parse_value(FlagInfo("--dtype", choices=("auto", "bfloat16")), "bf16")


REPORT: dict[str, Any] = {
    "sglang_version": "0.5.9",
    "gpu_total_gib": 47.99,
    "baseline_free_gib": 46.99,
    "mem_fraction_static": 0.85,
    "mem_fraction_static_auto": 0.816,
    "weights_gib": 25.89,
    "draft_weights_gib": 0.41,
    "rest_gib": 14.05,
    "max_total_num_tokens": 248129,
    "max_running_requests": 8,
    "context_length": 32768,
    "mamba": {"state_gib": 0.63, "max_mamba_cache_size": 8, "spec_state_gib": 0.1},
    "swa": None,
    "slack_gib": 7.05,
    "verdict": "tight",
    "error": None,
    "warnings": [
        {"code": "c", "message": "Lower it", "flag": "--max-running-requests", "suggested_value": 8}
    ],
}


def test_the_fit_panel_shows_verdict_numbers_and_warnings_with_their_flag() -> None:
    text = fit_text(REPORT).plain
    assert "TIGHT" in text
    assert "KV tokens       248,129" in text
    assert "auto would be 0.816" in text
    assert "--max-running-requests: Lower it → --max-running-requests 8" in text


def test_the_fit_panel_explains_why_there_is_no_fit() -> None:
    assert "cannot read" in fit_text(None, "cannot read /m/config.json").plain


def test_the_timeline_shows_predicted_next_to_actual() -> None:
    view = TimelineView(
        phase="ready",
        elapsed_s=135.0,
        milestones=(
            Milestone("load_weight_end", "weights loaded", 86.0, True),
            Milestone("ready", "ready", None, False),
        ),
        comparisons=(("KV tokens", "248,129", "248,120"),),
    )
    text = timeline_text(view).plain
    assert "Startup ready · 2m15s" in text
    assert "✓ weights loaded" in text and "· ready" in text
    assert "KV tokens predicted 248,129 / actual 248,120" in text
    assert elapsed(5.25) == "5.2s"


def test_only_flag_suggestions_with_a_value_are_applied_by_a_key() -> None:
    diag = DiagnosisView(
        "Not enough memory",
        "why",
        (
            SuggestionView("--tp-size", None, "more GPUs"),
            SuggestionView("--max-running-requests", "8", "fewer"),
        ),
    )
    assert first_applicable([diag]) == diag.suggestions[1]
    assert "--max-running-requests 8  [a] apply" in diagnosis_text([diag]).plain
    rest = without_first([diag])
    assert first_applicable(rest) is None
    assert rest[0].suggestions == (diag.suggestions[0],)


def test_terminals_without_truecolor_get_the_ansi_theme() -> None:
    themes = ["textual-dark", "ansi-dark"]
    assert pick_theme(themes, {"COLORTERM": "truecolor"}) == "textual-dark"
    assert pick_theme(themes, {"COLORTERM": "24bit"}) == "textual-dark"
    assert pick_theme(themes, {}) == "ansi-dark"
    assert pick_theme(["textual-dark", "textual-ansi", "ansi-dark"], {"TERM": "screen"}) == "textual-ansi"
