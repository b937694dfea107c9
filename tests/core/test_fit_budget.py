"""The budget breakdown: what each pool took from the static budget, kept when the launch fails.

Worked example A (sglang-memory.md section 8) on 0.5.9 and 0.5.23, and the RTX PRO 6000 incident
(Qwen3.6-27B, MTP, extra_buffer, 128 running requests) from DESIGN.md.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from sgtui.core.fit import fit
from sgtui.core.fit.report import BudgetLine, FitReport
from sgtui.core.flags import LaunchSpec
from sgtui.core.gpus import parse_gpu
from sgtui.core.model import ModelFacts, load_model_facts
from tests.cases import A6000, EXAMPLE_A, H100, LLAMA, MEASURED_A, QWEN35

RTX_PRO_6000 = parse_gpu("RTX-PRO-6000")
GIB = 1 << 30
SLOT_TP2 = 76_972_032  # one Qwen3.5-27B state slot at TP 2 (section 8)

# the RTX PRO 6000 profile: one 96 GB card, MTP, extra_buffer, 128 running requests
PRO_6000 = replace(
    EXAMPLE_A,
    tp_size=1,
    mem_fraction_static=0.9,
    context_length=65536,
    mamba_strategy="extra_buffer",
    max_running_requests=128,
)


@pytest.fixture(scope="module")
def qwen35() -> ModelFacts:
    return load_model_facts(QWEN35)


def _lines(r: FitReport) -> dict[str, float]:
    return {b.key: b.gib for b in r.budget}


def _line(r: FitReport, key: str) -> BudgetLine:
    return next(b for b in r.budget if b.key == key)


# --- example A, 0.5.9: fails, and says why ----------------------------------------------------------------


def test_a_failing_fit_keeps_the_budget_steps_of_the_spec_example(qwen35: ModelFacts) -> None:
    r = fit(EXAMPLE_A, qwen35, A6000, version="0.5.9", **MEASURED_A)
    assert r.verdict == "fails" and r.error is not None
    assert r.error.startswith("RuntimeError: Not enough memory")
    assert [b.key for b in r.budget] == ["static_budget", "speculative_state", "mamba_state", "kv_pool"]
    lines = _lines(r)
    assert lines["static_budget"] == pytest.approx(14.45, abs=0.005)
    assert lines["speculative_state"] == pytest.approx(-13.76, abs=0.005)
    assert lines["mamba_state"] == pytest.approx(-3.44, abs=0.005)
    assert lines["kv_pool"] == pytest.approx(-2.75, abs=0.01)
    assert r.kv_pool_gib == lines["kv_pool"]


def test_a_failing_fit_names_the_requests_and_slots_that_ate_the_budget(qwen35: ModelFacts) -> None:
    r = fit(EXAMPLE_A, qwen35, A6000, version="0.5.9", **MEASURED_A)
    assert _line(r, "speculative_state").item == "speculative state (48 requests x 4 draft tokens)"
    mamba = _line(r, "mamba_state")
    assert mamba.item == "Mamba state (48 slots)"
    assert "radix cache off: 1 slot per request" in mamba.detail


def test_a_failing_fit_keeps_the_mamba_pool_and_the_requests_it_was_sized_for(qwen35: ModelFacts) -> None:
    r = fit(EXAMPLE_A, qwen35, A6000, version="0.5.9", **MEASURED_A)
    assert r.mamba is not None
    assert (r.mamba.slot_bytes, r.mamba.max_mamba_cache_size) == (SLOT_TP2, 48)
    assert r.mamba.spec_state_gib == pytest.approx(SLOT_TP2 * 48 * 4 / GIB)
    assert r.max_running_requests == 48


def test_a_failing_fit_reports_sglangs_token_count_before_its_check(qwen35: ModelFacts) -> None:
    """floor(left bytes / cell bytes): negative, as SGLang computes it just before raising."""
    r = fit(EXAMPLE_A, qwen35, A6000, version="0.5.9", **MEASURED_A)
    assert r.max_total_num_tokens == int(r.kv_pool_gib * GIB) // 32768
    assert r.max_total_num_tokens < -80_000


def test_a_failing_fit_predicts_only_the_log_lines_sglang_printed_before_it_stopped(
    qwen35: ModelFacts,
) -> None:
    log = fit(EXAMPLE_A, qwen35, A6000, version="0.5.9", **MEASURED_A).predicted_log
    assert (log["load_weight_begin_avail_gib"], log["weight_mem_gib"]) == (47.0, 25.5)
    assert log["avail_mem_after_weights_gib"] == 21.5
    assert "kv_tokens" not in log and "mamba_cache_size" not in log


def test_a_failing_fit_json_keeps_the_contract_keys_and_adds_the_budget(qwen35: ModelFacts) -> None:
    data = fit(EXAMPLE_A, qwen35, A6000, version="0.5.9", **MEASURED_A).to_json()
    assert data["verdict"] == "fails" and data["error"].startswith("RuntimeError: Not enough memory")
    assert data["mamba"]["max_mamba_cache_size"] == 48
    assert data["mamba"]["spec_state_gib"] == pytest.approx(13.76, abs=0.005)
    assert data["kv_pool_gib"] == pytest.approx(-2.75, abs=0.01)
    assert [(b["item"], round(b["gib"], 2)) for b in data["budget"]] == [
        ("static budget", 14.45),
        ("speculative state (48 requests x 4 draft tokens)", -13.76),
        ("Mamba state (48 slots)", -3.44),
        (f"KV pool ({data['max_total_num_tokens']:,} tokens)", -2.75),
    ]


# --- example A, 0.5.23: fits, same breakdown ---------------------------------------------------------------


def test_a_fitting_fit_on_0_5_23_has_the_same_breakdown(qwen35: ModelFacts) -> None:
    r = fit(EXAMPLE_A, qwen35, A6000, version="0.5.23", **MEASURED_A)
    assert r.verdict == "fits"
    lines = _lines(r)
    assert lines["static_budget"] == pytest.approx(13.952, abs=0.01)
    assert lines["speculative_state"] == pytest.approx(-2.87, abs=0.005)
    assert lines["mamba_state"] == pytest.approx(-3.51, abs=0.005)
    assert lines["kv_pool"] == pytest.approx(7.57, abs=0.02)
    assert _line(r, "speculative_state").count == "9 requests (+1 padding row) x 4 draft tokens"
    assert _line(r, "mamba_state").count == "49 slots = K 48 + 1 padding"
    assert "extra_buffer: 5 slots per request" in _line(r, "mamba_state").detail
    assert _line(r, "kv_pool").count == f"{r.max_total_num_tokens:,} tokens"


@pytest.mark.parametrize("version", ["0.5.9", "0.5.11", "0.5.23"])
@pytest.mark.parametrize(
    "spec",
    [
        EXAMPLE_A,
        replace(EXAMPLE_A, max_running_requests=8),
        replace(EXAMPLE_A, disable_radix_cache=True),
        replace(EXAMPLE_A, speculative_algorithm=None, mem_fraction_static=0.8),
    ],
    ids=["mtp", "mtp-8-requests", "mtp-radix-off", "no-spec"],
)
def test_the_budget_lines_add_up_to_what_the_kv_pool_gets(
    qwen35: ModelFacts, spec: LaunchSpec, version: str
) -> None:
    r = fit(spec, qwen35, A6000, version=version, **MEASURED_A)
    if not r.budget:  # refused before any memory was measured (0.5.11's radix conflict)
        assert r.error is not None and "radix cache" in r.error
        return
    assert r.budget[0].key == "static_budget" and r.budget[-1].key == "kv_pool"
    assert sum(b.gib for b in r.budget[:-1]) == pytest.approx(r.budget[-1].gib, abs=1e-9)
    assert r.budget[-1].gib == r.kv_pool_gib


def test_a_dense_model_budget_is_the_static_budget_and_the_kv_pool() -> None:
    llama = load_model_facts(LLAMA)
    r = fit(LaunchSpec(), llama, H100, version="0.5.11", free_gib=78.5, weights_gib=15.0)
    assert [b.key for b in r.budget] == ["static_budget", "kv_pool"]
    assert r.budget[0].gib == r.budget[1].gib == pytest.approx(50.155, abs=0.001)


def test_weights_that_do_not_load_leave_no_budget_steps() -> None:
    llama = load_model_facts(LLAMA)
    r = fit(LaunchSpec(), llama, parse_gpu("L4"), version="0.5.11", free_gib=10.0, weights_gib=15.0)
    assert r.verdict == "fails" and r.error is not None and "CUDA out of memory" in r.error
    assert (r.budget, r.mamba, r.max_total_num_tokens) == ([], None, 0)


# --- 0.5.23 failures that stop before the KV pool -----------------------------------------------------------


def test_0_5_23_no_memory_after_the_state_pools_keeps_the_negative_remainder(qwen35: ModelFacts) -> None:
    spec = replace(EXAMPLE_A, disable_radix_cache=True, max_running_requests=48)
    r = fit(spec, qwen35, A6000, version="0.5.23", **MEASURED_A)
    assert r.error is not None and r.error.startswith("ValueError: Loaded weights leave no GPU memory")
    assert _line(r, "speculative_state").count == "48 requests (+1 padding row) x 4 draft tokens"
    assert _line(r, "mamba_state").count == "49 slots = K 48 + 1 padding"
    assert r.kv_pool_gib < 0 and r.max_total_num_tokens < 0
    assert r.mamba is not None and r.mamba.max_mamba_cache_size == 48


def test_0_5_23_a_state_cache_without_one_slot_shows_what_the_speculative_state_left(
    qwen35: ModelFacts,
) -> None:
    r = fit(replace(EXAMPLE_A, mem_fraction_static=0.56), qwen35, A6000, version="0.5.23", **MEASURED_A)
    assert r.error is not None and "Not enough GPU memory for hybrid" in r.error
    assert r.mamba is not None and r.mamba.max_mamba_cache_size <= 0 and r.mamba.state_gib == 0
    mamba = _line(r, "mamba_state")
    assert mamba.gib == 0 and mamba.count == f"max_mamba_cache_size {r.mamba.max_mamba_cache_size}"
    assert "kv_pool" not in _lines(r)


# --- the RTX PRO 6000 incident ------------------------------------------------------------------------


@pytest.mark.parametrize(("version", "per_request"), [("0.5.9", 4), ("0.5.11", 5)])
def test_rtx_pro_6000_with_128_requests_fails_on_their_speculative_state(
    qwen35: ModelFacts, version: str, per_request: int
) -> None:
    """What the engine says: 128 requests x 4 draft tokens of state (146.8 MiB each at TP 1) are
    73.4 GiB against a 34.5 GiB budget; the extra_buffer slots come after and SGLang's ratio split
    of the negative remainder gives a negative K."""
    r = fit(PRO_6000, qwen35, RTX_PRO_6000, version=version)
    assert r.verdict == "fails" and r.error is not None and "Not enough memory" in r.error
    spec_line = _line(r, "speculative_state")
    assert spec_line.count == "128 requests x 4 draft tokens"
    assert spec_line.gib == pytest.approx(-2 * SLOT_TP2 * 128 * 4 / GIB)
    assert -spec_line.gib > r.rest_gib
    assert f"extra_buffer: {per_request} slots per request" in _line(r, "mamba_state").detail
    assert r.mamba is not None and r.mamba.max_mamba_cache_size < 0 and r.mamba.state_gib == 0
    assert r.max_running_requests == 128


def test_rtx_pro_6000_extra_buffer_caps_the_requests_once_the_state_fits(qwen35: ModelFacts) -> None:
    r = fit(replace(PRO_6000, max_running_requests=32), qwen35, RTX_PRO_6000, version="0.5.11")
    assert r.verdict != "fails"
    assert r.mamba is not None and r.mamba.ratio == 5
    assert r.max_running_requests == r.mamba.max_mamba_cache_size // 5 < 32
    assert any(w.code == "mrr_capped_by_mamba" for w in r.warnings)
    assert "extra_buffer: 5 slots per request" in _line(r, "mamba_state").detail
    drop = next(w for w in r.warnings if w.code == "mamba_extra_buffer")
    assert (
        "no_buffer --disable-radix-cache: " in drop.message
        and "max_running_requests 32 (fits)" in drop.message
    )


def test_rtx_pro_6000_profile_without_extra_buffer_fits(qwen35: ModelFacts) -> None:
    spec = replace(PRO_6000, mamba_strategy=None, disable_radix_cache=True, max_running_requests=32)
    r = fit(spec, qwen35, RTX_PRO_6000, version="0.5.11")
    assert r.verdict != "fails" and r.max_running_requests == 32
    assert _line(r, "mamba_state").count == "32 slots"


def test_rtx_pro_6000_on_0_5_23_shows_the_extra_buffer_slots_in_the_state_line(qwen35: ModelFacts) -> None:
    r = fit(PRO_6000, qwen35, RTX_PRO_6000, version="0.5.23")
    assert r.verdict != "fails" and r.mamba is not None
    k = r.mamba.max_mamba_cache_size
    assert _line(r, "mamba_state").count == f"{k + 1} slots = K {k} + 1 padding"
    assert r.max_running_requests == k // 5 < 128


# --- SGLang's automatic fraction as it prints it --------------------------------------------------------


def test_auto_fraction_in_json_has_three_decimals_without_a_vision_tower() -> None:
    llama = load_model_facts(LLAMA)
    data = fit(LaunchSpec(), llama, H100, version="0.5.9", free_gib=78.5, weights_gib=15.0).to_json()
    assert data["mem_fraction_static_auto"] == 0.835


def test_auto_fraction_in_json_keeps_four_decimals_after_the_vlm_factor(qwen35: ModelFacts) -> None:
    """0.5.9 rounds (49140 - 9024) / 49140 to 0.816, then multiplies by 0.95 x the ViT clamp without
    rounding again (the config's vision tower: 24 layers by default, hidden 1152)."""
    r = fit(EXAMPLE_A, qwen35, A6000, version="0.5.9", **MEASURED_A)
    factor = 0.95 * (1.0 - 0.1 * (24 * 1152**2 / (24 * 1024**2) - 1.0))
    assert r.mem_fraction_static_auto == 0.816 * factor  # the float SGLang keeps and logs
    assert r.to_json()["mem_fraction_static_auto"] == round(0.816 * factor, 4) == 0.7546
