"""The widgets' rendering and bookkeeping, without an app where none is needed."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from textual.app import App, ComposeResult

from sgtui.ui import profile_ops
from sgtui.ui.app import pick_theme
from sgtui.ui.fitting import FitInputs, compute_fit
from sgtui.ui.logtext import clean_line, strip_ansi
from sgtui.ui.screens.gpu_detail import LEGEND_COLS, GpuChart, GpuDetailScreen, place_labels
from sgtui.ui.session.gpu_history import GpuHistory
from sgtui.ui.session.startup import StartupTracker
from sgtui.ui.views import DiagnosisView, GpuView, Milestone, SuggestionView, TimelineView
from sgtui.ui.widgets.diagnosis import DiagnosisPanel, diagnosis_text, first_applicable
from sgtui.ui.widgets.fit_panel import fit_text
from sgtui.ui.widgets.gpu_sparkline import BARS, bar_for, sparkline_text
from sgtui.ui.widgets.launch_form import FlagInfo, parse_value
from sgtui.ui.widgets.log_store import MAX_LINE
from sgtui.ui.widgets.log_view import LogView
from sgtui.ui.widgets.run_log import line_kind
from sgtui.ui.widgets.timeline import elapsed, timeline_text
from tests.ui.scripts import ready_log


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


class LogApp(App[None]):
    def compose(self) -> ComposeResult:
        yield LogView(max_lines=100)


async def test_the_log_keeps_at_most_max_lines_and_clips_huge_lines() -> None:
    app = LogApp()
    async with app.run_test(size=(80, 10)):
        log = app.query_one(LogView)
        for i in range(10):
            log.append([f"line {i * 50 + j}" for j in range(50)])
        log.append(["y" * (MAX_LINE + 500)])
        assert log.line_count <= 100
        assert log.total_lines == 501
        assert log.lines[-1].endswith("[500 more chars]")


async def test_the_filter_hides_and_restores_lines_including_later_ones() -> None:
    app = LogApp()
    async with app.run_test(size=(80, 10)):
        log = app.query_one(LogView)
        log.append(["alpha", "Beta error", "gamma"])
        log.set_search("beta")
        assert log.line_count == 1
        log.append(["more beta", "delta"])
        assert list(log.lines) == ["Beta error", "more beta"]
        log.set_search("")
        assert log.line_count == 5


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
    assert "KV tokens     248,129" in text
    assert "auto would be 0.816" in text
    assert "--max-running-requests: Lower it → --max-running-requests 8" in text


# what fit() reports for worked example A on 0.5.9 (Qwen3.6-27B, 2x A6000, NEXTN): the pools eat the budget
FAILING_BUDGET: list[dict[str, Any]] = [
    {"key": "static_budget", "item": "static budget", "gib": 14.8367, "count": "", "detail": "A - P*(1-mfs)"},
    {
        "key": "speculative_state",
        "item": "speculative state (48 requests x 4 draft tokens)",
        "gib": -13.7637,
        "count": "48 requests x 4 draft tokens",
        "detail": "73.4 MiB of state per request and draft token",
    },
    {
        "key": "mamba_state",
        "item": "Mamba state (48 slots)",
        "gib": -3.4409,
        "count": "48 slots",
        "detail": "73.4 MiB each",
    },
    {
        "key": "kv_pool",
        "item": "KV pool (-77,591 tokens)",
        "gib": -2.3679,
        "count": "-77,591 tokens",
        "detail": "32,768 B per token, bfloat16, page 1",
    },
]
FAILING = dict(
    REPORT,
    verdict="fails",
    error="RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
    rest_gib=14.8367,
    kv_pool_gib=-2.3679,
    max_total_num_tokens=-77591,
    max_running_requests=48,
    budget=FAILING_BUDGET,
)


def test_a_failing_fit_shows_what_ate_the_budget_and_the_shortfall_instead_of_negative_tokens() -> None:
    text = fit_text(FAILING).plain
    lines = text.splitlines()
    assert "static budget  14.84 GiB" in lines
    assert "- spec state   13.76 GiB  93%" in lines
    assert "  48 req x 4 draft" in lines
    assert "- Mamba state   3.44 GiB  23%" in lines
    assert "  48 slots" in lines
    assert "= KV pool      -2.37 GiB" in lines
    assert "  2.37 GiB short: no tokens" in lines
    assert "77,591" not in text and "KV tokens" not in text
    assert "graph slack" not in text  # nothing was left for graphs to use: the row would mislead


def test_the_biggest_bite_of_a_failing_budget_is_highlighted() -> None:
    text = fit_text(FAILING)
    start = text.plain.index("- spec state")
    styles = {str(span.style) for span in text.spans if span.start <= start < span.end}
    assert "bold red" in styles
    mamba = text.plain.index("- Mamba state")
    assert not any("red" in str(span.style) for span in text.spans if span.start <= mamba < span.end)


def test_a_fitting_budget_shows_the_kv_tokens_under_the_pool() -> None:
    budget = [
        dict(FAILING_BUDGET[0], gib=14.34),
        {"key": "mamba_state", "item": "Mamba state (50 slots)", "gib": -3.58, "count": "50 slots"},
        {"key": "kv_pool", "item": "KV pool", "gib": 7.89, "count": "258,573 tokens"},
    ]
    lines = fit_text(dict(REPORT, budget=budget, max_total_num_tokens=258573)).plain.splitlines()
    assert lines[lines.index("= KV pool       7.89 GiB") + 1] == "  258,573 tokens"
    assert "max running        8" in lines


def test_a_report_without_budget_lines_shows_the_shortfall_not_a_negative_token_count() -> None:
    text = fit_text(dict(REPORT, max_total_num_tokens=-77591, kv_pool_gib=-2.37, verdict="fails")).plain
    assert "KV tokens     none: 2.37 GiB short" in text and "-77,591" not in text
    refused = dict(REPORT, max_total_num_tokens=0, kv_pool_gib=0.0, verdict="fails", error="ValueError: x")
    assert "KV tokens" not in fit_text(refused).plain  # SGLang stopped before it sized the pool


def test_the_fit_budget_stays_within_the_narrow_panel_with_notes_wrapped_under_their_indent() -> None:
    budget = [
        *FAILING_BUDGET[:1],
        dict(FAILING_BUDGET[1], count="9 requests (+1 padding row) x 4 draft tokens"),
        *FAILING_BUDGET[2:],
    ]
    lines = fit_text(dict(FAILING, budget=budget), width=29).plain.splitlines()
    table = lines[: lines.index("")]  # up to the error text
    assert all(len(line) <= 29 for line in table), table
    at = table.index("- spec state   13.76 GiB  93%")
    assert table[at + 1 : at + 3] == ["  9 req (+1 padding row) x 4", "  draft"]


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


def test_a_failing_predictions_token_count_is_compared_as_none_with_its_shortfall() -> None:
    tracker = StartupTracker(dict(FAILING))
    tracker.feed([clean_line(line) for line in ready_log()])
    compared = {label: (predicted, actual) for label, predicted, actual in tracker.timeline().comparisons}
    assert compared["KV tokens"] == ("none (2.37 GiB short)", "248,120")
    assert compared["max running req"] == ("48", "8")


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


async def test_once_a_fix_is_applied_the_failed_runs_diagnosis_offers_no_second_one_to_stack() -> None:
    """After `a`, the panel moved on to the next suggestion (made for the flags the run failed with):
    pressing `a` again stacked two remedies for one shortfall. Now it says applied, and offers none."""
    diag = DiagnosisView(
        "Not enough memory",
        "why",
        (
            SuggestionView("--max-running-requests", "8", "8 concurrent requests reserve less"),
            SuggestionView("--mem-fraction-static", "0.9", "more for the pool"),
        ),
    )
    panel = DiagnosisPanel()
    async with App().run_test() as pilot:
        await pilot.app.mount(panel)
        panel.show([diag])
        assert panel.first_suggestion == diag.suggestions[0]
        panel.consume_first()
        assert panel.first_suggestion is None
        text = diagnosis_text([diag], applied=panel.applied).plain
        assert "--max-running-requests 8  ✓ applied: r restarts with it" in text and "[a] apply" not in text
        panel.show([diag])  # the same diagnosis redrawn (a new log line): still applied
        assert panel.first_suggestion is None
    lines = diagnosis_text([diag]).plain.splitlines()
    assert lines[1] == "→ --max-running-requests 8  [a] apply"  # no stray "8" after the value:
    assert lines[2] == "  8 concurrent requests reserve less"  # the why begins on its own line


def test_the_fix_a_applies_comes_right_under_the_title_before_the_long_why() -> None:
    diag = DiagnosisView(
        "Not enough GPU memory for the KV cache",
        "SGLang had no memory left for the KV cache pool when it sized it.",
        (
            SuggestionView("--tp-size", None, "more GPUs"),
            SuggestionView("--max-running-requests", "8", "fewer requests reserve less state"),
        ),
    )
    lines = diagnosis_text([diag]).plain.splitlines()
    assert lines[0] == "✗ Not enough GPU memory for the KV cache"
    assert lines[1] == "→ --max-running-requests 8  [a] apply"
    assert lines[2] == "  fewer requests reserve less state"
    assert lines[3].startswith("SGLang had no memory left")
    assert lines[4:6] == ["→ --tp-size", "  more GPUs"]


def test_terminals_without_truecolor_get_the_ansi_theme() -> None:
    themes = ["textual-dark", "ansi-dark"]
    assert pick_theme(themes, {"COLORTERM": "truecolor"}) == "textual-dark"
    assert pick_theme(themes, {"COLORTERM": "24bit"}) == "textual-dark"
    assert pick_theme(themes, {}) == "ansi-dark"
    assert pick_theme(["textual-dark", "textual-ansi", "ansi-dark"], {"TERM": "screen"}) == "textual-ansi"


def test_the_fit_engines_own_failing_report_renders_as_a_budget_without_negative_tokens(profile: Any) -> None:
    """The panel reads the engine's budget keys: this breaks if either side renames them."""
    config = json.loads((Path(__file__).parents[1] / "fixtures/models/qwen3_5_27b/config.json").read_text())
    inputs = FitInputs(model_config=config, gpu_name="RTX A6000", gpu_mib=49140, n_gpus=2, version="0.5.9")
    report = compute_fit(profile_ops.values(profile), inputs)
    text = fit_text(report, width=29).plain
    assert report["verdict"] == "fails" and report["max_total_num_tokens"] < 0
    assert "- spec state" in text and "  48 req x 4 draft" in text and "GiB short: no tokens" in text
    assert f"{report['max_total_num_tokens']:,}" not in text


def _demo_history() -> GpuHistory:
    """The demo story's marks: a failed launch, then a relaunch that is ready seconds later."""
    history = GpuHistory()
    history.start = 0.0
    for t in range(0, 48):
        used = 0 if t < 12 else min(47_000, (t - 12) * 4000)
        history.add(float(t), [GpuView(i, "NVIDIA RTX A6000", used, 49_140) for i in (0, 1)])
    for t, label in [
        (0.5, "launch"),
        (1.0, "load_weight_begin"),
        (10.0, "failed"),
        (12.0, "launch"),
        (12.5, "load_weight_begin"),
        (14.0, "kv_cache_allocated"),
        (15.5, "cuda_graph_end"),
        (16.0, "ready"),
    ]:
        history.mark(t, label)
    return history


def test_milestone_names_close_in_time_are_stacked_instead_of_printed_over_each_other() -> None:
    marks = [(0.5, "launch"), (1.0, "load"), (10.0, "failed"), (12.0, "launch"), (12.5, "load")]
    placed = place_labels(marks, 47.0, 74, legend_rows=2)
    assert [name for _, _, name in placed] == ["launch", "load", "failed", "launch", "load"]
    spans: dict[int, list[tuple[int, int]]] = {}
    for col, row, name in placed:
        assert col + len(name) <= 74
        assert row >= 2 or col >= LEGEND_COLS  # never over the legend
        assert all(col + len(name) < a or col > b for a, b in spans.get(row, [])), placed
        spans.setdefault(row, []).append((col, col + len(name)))


class ChartApp(App[None]):
    def on_mount(self) -> None:
        self.push_screen(GpuDetailScreen(_demo_history(), None))


async def test_the_gpu_chart_at_80x24_shows_every_milestone_name_whole() -> None:
    app = ChartApp()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        chart = app.screen.query_one(GpuChart)
        text = chart.render().plain  # type: ignore[union-attr]
        names = [("launch", 2), ("load", 2), ("failed", 1), ("KV", 1), ("graphs", 1), ("ready", 1)]
        for name, times in names:
            assert len(re.findall(rf"(?<![A-Za-z]){name}(?![A-Za-z])", text)) == times, (name, text)
        assert "GPU0" in text and "GPU1" in text
