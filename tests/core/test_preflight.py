"""The preflight every launch path shows (`core/preflight.py`): the fix it offers is the one ranking's
first (`FitReport.first_fix`), a fitting launch is offered none, what blocks a launch, and the fit made
with the memory already in use on the target's GPUs."""

from __future__ import annotations

from sgtui.core.fit import fit
from sgtui.core.model import load_model_facts
from sgtui.core.preflight import (
    Check,
    LiveGpu,
    block_reason,
    check_lines,
    first_fix_json,
    fit_on_target,
    from_fit,
    from_fit_json,
)
from sgtui.core.sglang.flags import parse_argv
from tests.cases import A6000, EXAMPLE_A_FLAGS, QWEN35, QWEN_MODEL_PATH

FAILS = {
    "verdict": "fails",
    "error": "RuntimeError: Not enough memory.",
    "warnings": [
        {"code": "w", "message": "tight one", "flag": "--mem-fraction-static", "suggested_value": 0.92}
    ],
    "fixes": [],
}


def _example_a(version: str = "0.5.9") -> object:
    spec = parse_argv(["--model-path", QWEN_MODEL_PATH, *EXAMPLE_A_FLAGS], version).spec
    return fit(spec, load_model_facts(QWEN35), A6000, n_gpus=2, version=version)


def test_the_fix_offered_is_the_first_ranked_one_that_fits_not_the_first_warning() -> None:
    """A ranked fix that fits wins over a tight one listed before it and over every warning."""
    report = {
        **FAILS,
        "fixes": [
            {"flag": "--mem-fraction-static", "value": 0.92, "verdict": "tight", "why": "little slack"},
            {"flag": "--max-running-requests", "value": 8, "verdict": "fits", "why": "less state"},
        ],
    }
    pre = from_fit_json(report, [])
    assert pre.fix == ("--max-running-requests", 8)
    assert first_fix_json(report).verdict == "fits"


def test_before_the_ranking_lands_the_first_warning_with_a_value_is_offered() -> None:
    assert from_fit_json(FAILS, []).fix == ("--mem-fraction-static", 0.92)


def test_a_launch_that_fits_is_offered_no_fix_and_does_not_block() -> None:
    pre = from_fit_json(
        {**FAILS, "verdict": "fits", "error": None}, [Check("port", True, "port 30000 is free")]
    )
    assert pre.fix is None and not pre.blocks
    assert check_lines(pre) == ["port: ok: port 30000 is free"]  # the fit's own line is the headline's


def test_what_blocks_a_launch_the_fit_failing_or_a_blocking_check_but_not_a_warning() -> None:
    held = Check("gpus", False, "GPU 1 held by others: pid 7 (alice)")
    release = Check("sglang_release", False, "0.5.11 installed, profile written for 0.5.9", blocking=False)
    fits = {**FAILS, "verdict": "fits", "error": None}
    assert not from_fit_json(fits, [release]).blocks
    assert from_fit_json(fits, [held, release]).blocks
    assert block_reason(from_fit_json(fits, [held, release])) == "failed check: gpus"
    assert block_reason(from_fit_json(FAILS, [held])) == "the fit predicts it fails; failed check: gpus"
    lines = check_lines(from_fit_json(fits, [held, release]))
    assert lines[0].startswith("gpus: FAILED: ") and lines[1].startswith("sglang_release: warning: ")


def test_an_unknown_fit_says_why_in_the_event_and_offers_nothing() -> None:
    pre = from_fit(None, [], "the GPU size is not known yet (waiting for the first GPU sample)")
    assert pre.verdict == "unknown" and pre.fix is None and not pre.blocks
    event = pre.to_event()
    assert event["event"] == "preflight" and event["verdict"] == "unknown"
    assert event["checks"][0] == {
        "name": "fit",
        "ok": False,
        "message": "the fit is not known: the GPU size is not known yet (waiting for the first GPU sample)",
    }


def test_a_failing_report_gives_sglangs_error_and_a_fix_in_the_event() -> None:
    report = _example_a("0.5.9")
    pre = from_fit(report, [])
    assert pre.verdict == "fails" and pre.error == report.error  # type: ignore[attr-defined]
    event = pre.to_event()
    assert event["error"].startswith("RuntimeError: Not enough memory")
    assert isinstance(event["fix"], list) and event["fix"][0].startswith("--")


def test_memory_another_process_holds_is_taken_off_the_baseline_per_gpu() -> None:
    """20 GiB held on GPU 1: P is the estimate less 20 GiB there (SGLang's minimum over ranks), and the
    report says so; empty GPUs give the plain estimate."""
    flags = ["--model-path", QWEN_MODEL_PATH, *EXAMPLE_A_FLAGS, "--max-running-requests", "8"]
    spec = parse_argv(flags, "0.5.9").spec  # the demo's working launch
    model = load_model_facts(QWEN35)
    empty = [LiveGpu(0, "NVIDIA RTX A6000", 49140, 3.0), LiveGpu(1, "NVIDIA RTX A6000", 49140, 3.0)]
    held = [empty[0], LiveGpu(1, "NVIDIA RTX A6000", 49140, 20480.0)]
    plain = fit_on_target(spec, model, empty, version="0.5.9", n_gpus=2)
    live = fit_on_target(spec, model, held, version="0.5.9", n_gpus=2)
    assert plain.baseline_estimated and plain.baseline_free_gib > 40
    assert abs(live.baseline_free_gib - (plain.baseline_free_gib - 20.0)) < 0.01
    assert any("GPU 1 20.00 GiB" in n for n in live.notes)
    assert plain.verdict != "fails" and live.verdict == "fails"
