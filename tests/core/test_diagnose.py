"""Diagnosis: plain words, the log's numbers, and flag changes whose direction cannot be misread."""

from __future__ import annotations

from typing import Any

import pytest

from sgtui.core.logs import Diagnosis, Suggestion, classify_text, diagnose, mfs_suggestion, nearest_flags
from tests.cases import LOGS

SIGQUIT = "[2026-01-02 10:00:09] Received sigquit from a child process. It usually means the child failed."


def _first(text: str, fit: Any = None) -> Diagnosis:
    result = diagnose(classify_text(text), fit)
    assert result, "expected a diagnosis"
    return result[0]


def _flags(d: Diagnosis) -> dict[str | None, str | None]:
    return {s.flag: s.value for s in d.suggestions}


def test_not_enough_memory_shows_baseline_weights_fraction_and_what_remained() -> None:
    text = (
        "[2026-01-01 10:00:00] server_args=ServerArgs(model_path='m', mem_fraction_static=0.5, tp_size=2)\n"
        "[2026-01-01 10:00:01 TP0] Load weight begin. avail mem=78.54 GB\n"
        "[2026-01-01 10:00:30 TP0] Load weight end. type=MixtralForCausalLM, dtype=torch.bfloat16, "
        "avail mem=35.02 GB, mem usage=43.52 GB.\n"
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n" + SIGQUIT + "\n"
    )
    d = _first(text)
    assert d.error_class == "not_enough_memory"
    for number in ("78.54 GiB", "43.52 GiB", "0.5", "39.27 GiB", "-4.25 GiB"):
        assert number in d.detail
    mfs = next(s for s in d.suggestions if s.flag == "--mem-fraction-static")
    assert mfs.value == "0.58"  # minimum viable 1 - 35.02/78.54 = 0.554, plus a margin
    assert mfs.why.startswith("Raise --mem-fraction-static from 0.5 to 0.58")


def test_hybrid_speculative_oom_with_a_fit_report_suggests_fewer_running_requests() -> None:
    fit = {
        "rest_gib": 14.45,
        "max_running_requests": 48,
        "speculative_num_draft_tokens": 4,
        "mamba": {
            "slot_bytes": 76972032,
            "max_mamba_cache_size": 48,
            "state_gib": 3.44,
            "spec_state_gib": 13.76,
        },
        "warnings": [],
    }
    d = _first((LOGS / "v059_tp2_nextn_not_enough_memory.log").read_text(), fit)
    first = d.suggestions[0]
    assert (first.flag, first.value) == ("--max-running-requests", "8")
    assert "13.76 GiB" in d.detail and "48 requests" in d.detail


class _FakeFitReport:
    """Stands in for sgtui.core.fit.FitReport: only `to_json()` is read."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def to_json(self) -> dict[str, Any]:
        return self._data


def test_a_fit_report_object_is_read_through_its_json_and_its_flag_advice_is_kept() -> None:
    fit = _FakeFitReport(
        {
            "warnings": [
                {
                    "code": "x",
                    "message": "Use fewer slots.",
                    "flag": "--max-mamba-cache-size",
                    "suggested_value": 64,
                }
            ]
        }
    )
    d = _first(
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n" + SIGQUIT, fit
    )
    assert _flags(d)["--max-mamba-cache-size"] == "64"


def test_the_fit_engines_fraction_beats_a_rule_of_thumb_and_its_own_options_are_left_out() -> None:
    fit = {
        "mamba": None,
        "max_running_requests": 0,
        "warnings": [
            {"code": "raise", "message": "m", "flag": "--mem-fraction-static", "suggested_value": 0.931},
            {"code": "mrr", "message": "m", "flag": "--max-running-requests", "suggested_value": 37},
            {"code": "est", "message": "m", "flag": "--draft-weights-gib", "suggested_value": None},
        ],
    }
    d = _first((LOGS / "v059_tp2_nextn_not_enough_memory.log").read_text(), fit)
    flags = _flags(d)
    assert flags["--mem-fraction-static"] == "0.931"
    assert flags["--max-running-requests"] == "8"
    assert "--draft-weights-gib" not in flags
    mrr = next(s for s in d.suggestions if s.flag == "--max-running-requests")
    assert mrr.why.endswith("The fit engine's limit: 37.")


def test_hybrid_speculative_oom_without_a_fit_report_still_points_at_running_requests() -> None:
    d = _first((LOGS / "v059_tp2_nextn_not_enough_memory.log").read_text())
    assert _flags(d)["--max-running-requests"] == "8"
    assert "hybrid" in d.detail


def test_weights_too_large_for_any_fraction_suggest_more_gpus_or_quantization() -> None:
    text = (
        "Load weight end. quant=fp8, fmt=e4m3, avail mem=2.00 GB, mem usage=136.00 GB.\n"
        "[2026-01-01 10:00:00] server_args=ServerArgs(model_path='m', mem_fraction_static=0.88, tp_size=8)\n"
        "ValueError: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.88. "
        "Raise --mem-fraction-static above 0.99 (minimum viable = 1 - available/pre = 0.9856).\n"
    )
    d = _first(text)
    flags = _flags(d)
    assert flags["--tp-size"] == "16"
    assert "--mem-fraction-static" not in flags
    assert "--quantization" not in flags  # already fp8


def test_cuda_oom_while_loading_weights_is_about_the_weights_not_the_fraction() -> None:
    text = (
        "[2026-01-01 10:00:00] server_args=ServerArgs(model_path='m', mem_fraction_static=0.7, tp_size=1)\n"
        "[2026-01-01 10:00:01] Load weight begin. avail mem=15.27 GB\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 114.00 MiB. GPU 0 has a total "
        "capacity "
        "of 15.58 GiB of which 54.38 MiB is free.\n" + SIGQUIT + "\n"
    )
    d = _first(text)
    assert d.title == "CUDA out of memory while loading the weights"
    assert _flags(d)["--tp-size"] == "2"
    assert "15.27 GiB" in d.detail and "0.11 GiB" in d.detail


def test_cuda_oom_during_graph_capture_lowers_graph_batch_size_and_the_fraction() -> None:
    text = (
        "[2026-01-01 10:00:00] server_args=ServerArgs(model_path='m', mem_fraction_static=0.9, "
        "cuda_graph_max_bs=160)\n"
        "[2026-01-01 10:00:05] Capture cuda graph begin. This can take up to several minutes. avail mem=1.20 "
        "GB\n"
        "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 512.00 MiB.\n"
        + SIGQUIT
        + "\n"
    )
    d = _first(text)
    assert d.error_class == "cuda_graph_failed"
    flags = _flags(d)
    assert flags["--cuda-graph-max-bs"] == "80"
    assert flags["--mem-fraction-static"] == "0.85"
    why = next(s.why for s in d.suggestions if s.flag == "--mem-fraction-static")
    assert why.startswith("Lower --mem-fraction-static from 0.9 to 0.85")


def test_graph_flags_use_the_0_5_23_names_when_the_log_is_from_that_era() -> None:
    text = (
        "[2026-05-01 10:00:00] Memory baseline taken. mem usage=0.7 GB\n"
        "[2026-05-01 10:00:40] Capture target decode CUDA graph begin. backend=full, avail mem=1.0 GB\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB.\n" + SIGQUIT + "\n"
    )
    assert "--cuda-graph-max-bs-decode" in _flags(_first(text))


def test_0_5_9_piecewise_graph_lines_keep_the_old_graph_flag_name() -> None:
    text = (
        "[2026-01-01 10:00:40] Capture piecewise CUDA graph begin. avail mem=1.0 GB\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB.\n" + SIGQUIT + "\n"
    )
    assert "--cuda-graph-max-bs" in _flags(_first(text))


def test_nccl_shm_failure_suggests_a_bigger_shm_and_p2p_off() -> None:
    text = (
        "[2026-01-01 10:00:00] server_args=ServerArgs(model_path='m', tp_size=8)\n"
        "torch.distributed.DistBackendError: NCCL error in: x, unhandled system error\n"
        "Error while creating shared memory segment /dev/shm/nccl-ufmqwQ (size 7340384)\n" + SIGQUIT + "\n"
    )
    flags = _flags(_first(text))
    assert flags["--shm-size"] == "32g"
    assert flags["NCCL_P2P_DISABLE"] == "1"
    assert flags["--tp-size"] == "4"


def test_port_in_use_names_the_port_and_a_free_one() -> None:
    text = (
        "ERROR:    [Errno 98] error while attempting to bind on address ('::', 31000, 0, 0): "
        "address already in use\n"
    )
    d = _first(text)
    assert _flags(d)["--port"] == "31001"
    assert "31000" in d.detail


def test_an_internal_port_clash_is_told_apart_from_the_http_port() -> None:
    text = (
        "[2026-01-01 10:00:00] server_args=ServerArgs(model_path='m', port=30000)\n"
        "zmq.error.ZMQError: Address already in use (addr='tcp://127.0.0.1:30007')\n" + SIGQUIT + "\n"
    )
    d = _first(text)
    assert "30007" in d.detail and "--port 30000" in d.detail
    assert _flags(d)["--port"] is None


def test_an_unknown_flag_gets_the_nearest_real_flag_name() -> None:
    d = _first("launch_server.py: error: unrecognized arguments: --mem-fraction-statik 0.8\n")
    assert _flags(d) == {"--mem-fraction-static": None}
    assert nearest_flags("--speculative-algorithmm")[0] == "--speculative-algorithm"


def test_a_tp_size_that_does_not_divide_the_heads_suggests_one_that_does() -> None:
    d = _first(
        "AssertionError: Total number of attention heads (40) must be divisible by tensor parallel size (3)\n"
    )
    assert _flags(d) == {"--tp-size": "8"}
    assert "40 attention heads" in d.detail


def test_an_ambiguous_abbreviation_suggests_spelling_the_flag_out() -> None:
    text = (
        "launch_server.py: error: ambiguous option: --speculative-algo could match --speculative-algorithm, "
        "--speculative-algo-extra\n"
    )
    assert _flags(_first(text)) == {"--speculative-algorithm": None}


def test_the_radix_conflict_suggests_disabling_the_radix_cache() -> None:
    text = (
        "ValueError: Speculative decoding for Qwen3_5ForConditionalGeneration is not compatible with radix "
        "cache "
        "when using --mamba-scheduler-strategy no_buffer.\n"
    )
    d = _first(text)
    assert d.suggestions[0].flag == "--disable-radix-cache"


def test_unsupported_architecture_says_to_upgrade_sglang() -> None:
    d = _first("ValueError: Model architectures ['FooForCausalLM'] are not supported for now.\n")
    assert "FooForCausalLM" in d.detail
    assert any("Upgrade SGLang" in s.why for s in d.suggestions)


def test_unbalanced_memory_points_at_the_gpu_panel() -> None:
    d = _first(
        "RuntimeError: The memory capacity is unbalanced. Some GPUs may be occupied by other processes.\n"
    )
    assert any("GPU panel" in s.why for s in d.suggestions)


def test_oom_killer_is_about_host_ram_not_gpu_memory() -> None:
    d = _first("RuntimeError: Rank 0 scheduler died during initialization (exit code: -9).\n")
    assert "host RAM" in d.detail and "not GPU" in d.detail


def test_a_ready_server_whose_pool_is_shorter_than_the_context_gets_advice_not_an_error() -> None:
    text = (
        "[2026-01-01 10:00:00] server_args=ServerArgs(model_path='m', mem_fraction_static=0.85)\n"
        "[2026-01-01 10:00:09] max_total_num_tokens=46611, max_prefill_tokens=16384, "
        "max_running_requests=2049, "
        "context_len=131072\n"
        "[2026-01-01 10:00:10] The server is fired up and ready to roll!\n"
    )
    result = diagnose(classify_text(text))
    assert [d.error_class for d in result] == [None]
    assert _flags(result[0])["--context-length"] == "46611"


def test_a_healthy_log_needs_no_diagnosis() -> None:
    assert diagnose(classify_text((LOGS / "v03_time_only_tp2.log").read_text())) == []


@pytest.mark.parametrize(
    ("current", "target", "higher", "start"),
    [
        (0.85, 0.9, True, "Raise --mem-fraction-static from 0.85 to 0.9"),
        (0.9, 0.85, True, "Lower --mem-fraction-static from 0.9 to 0.85"),
        (None, 0.8, False, "Lower --mem-fraction-static to at most 0.8"),
        (None, 0.9, True, "Raise --mem-fraction-static to at least 0.9"),
    ],
)
def test_a_fraction_suggestion_says_which_way_it_moves(
    current: float | None, target: float, higher: bool, start: str
) -> None:
    s = mfs_suggestion(current, target, "cost", higher=higher)
    assert s.why.startswith(start)
    assert s.value == f"{target:g}"


ALL_CLASS_LOGS = [
    "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB.",
    "Exception: Capture cuda graph failed: CUDA out of memory.",
    "RuntimeError: NCCL error: unhandled system error",
    "ValueError: Model architectures ['X'] are not supported for now.",
    "ERROR:    [Errno 98] error while attempting to bind on address ('::', 1, 0, 0): address already in use",
    "launch_server.py: error: unrecognized arguments: --bogus",
    "ValueError: Speculative decoding for X is not compatible with radix cache",
    "RuntimeError: The memory capacity is unbalanced.",
    "RuntimeError: Rank 0 scheduler died during initialization (exit code: -9).",
    "AssertionError: something else",
    "",
]


@pytest.mark.parametrize("line", ALL_CLASS_LOGS)
def test_every_class_gets_suggestions_and_every_fraction_change_names_its_direction(line: str) -> None:
    text = (
        "[2026-01-01 10:00:00] server_args=ServerArgs(model_path='m', mem_fraction_static=0.85, tp_size=2)\n"
    )
    d = _first(text + line + "\n" + SIGQUIT + "\n")
    assert d.suggestions and d.detail
    for s in d.suggestions:
        assert isinstance(s, Suggestion) and s.why
        if s.flag == "--mem-fraction-static":
            assert s.why.startswith(("Raise --mem-fraction-static", "Lower --mem-fraction-static"))
