"""What `explain` says for failures first met in public logs: the numbers come from the log, the flag
changes are concrete, and the wording fits the failure (not a generic "no rule for this")."""

from __future__ import annotations

import pytest

from sgtui.core.logs import classify_text, diagnose, nearest_flags


def _log(*lines: str) -> str:
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("status", ["502", "403"])
def test_a_warm_up_request_refused_by_a_proxy_is_named_with_the_port_and_no_proxy(status: str) -> None:
    analysis = classify_text(
        _log(
            "[2025-02-01 10:00:00] INFO:     Uvicorn running on http://0.0.0.0:30123 (Press CTRL+C to quit)",
            "[2025-02-01 10:02:00] Initialization failed. warmup error: Traceback (most recent call last):",
            '  File "/opt/sglang/srt/entrypoints/http_server.py", line 1400, in _execute_server_warmup',
            '    assert res.status_code == 200, f"{res=}, {res.text=}"',
            f"AssertionError: res=<Response [{status}]>, res.text=''",
        )
    )
    assert analysis.error is not None and analysis.error.error_class == "other"
    diagnosis = diagnose(analysis)[0]
    assert diagnosis.title == f"The server's warm-up request got HTTP {status}"
    assert "127.0.0.1:30123" in diagnosis.detail
    assert ("no_proxy", "localhost,127.0.0.1") in [(s.flag, s.value) for s in diagnosis.suggestions]


def test_an_underscored_flag_is_answered_with_its_dashed_spelling() -> None:
    analysis = classify_text("launch_server.py: error: unrecognized arguments: --tool_call_parser qwen3\n")
    suggestion = diagnose(analysis)[0].suggestions[0]
    assert suggestion.flag == "--tool-call-parser"
    assert "dashes" in suggestion.why


def test_a_flag_that_is_gone_points_at_the_flag_sharing_its_telling_word() -> None:
    assert nearest_flags("--enable-reasoning")[0] == "--reasoning-parser"
    assert nearest_flags("--mem-fraction-statik")[0] == "--mem-fraction-static"


def test_a_far_too_low_mem_fraction_static_is_raised_to_a_usual_value_in_one_step() -> None:
    analysis = classify_text(
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
        "Current value: self.server_args.mem_fraction_static=0.2\n"
    )
    diagnosis = diagnose(analysis)[0]
    mfs = next(s for s in diagnosis.suggestions if s.flag == "--mem-fraction-static")
    assert mfs.value == "0.85"
    assert mfs.why.startswith("Raise --mem-fraction-static from 0.2 to 0.85")
    assert "far below" in diagnosis.detail


def test_a_capture_oom_quotes_the_allocation_that_failed() -> None:
    analysis = classify_text(
        "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 448.00 MiB. GPU 7 has a "
        "total capacity of 95.00 GiB of which 301.00 MiB is free.\n"
    )
    diagnosis = diagnose(analysis)[0]
    assert diagnosis.title == "CUDA graph capture ran out of memory"
    assert "It tried to allocate 0.44 GiB with 0.29 GiB free of 95.00 GiB." in diagnosis.detail
    assert [s.flag for s in diagnosis.suggestions][:2] == ["--cuda-graph-max-bs", "--mem-fraction-static"]
    assert diagnosis.suggestions[1].why.startswith("Lower --mem-fraction-static")


@pytest.mark.parametrize(
    ("line", "arch"),
    [
        (
            "ValueError: Unsupported architectures: FooLMForConditionalGeneration. "
            "Supported list: ['A', 'B']",
            "FooLMForConditionalGeneration",
        ),
        (
            "ValueError: Model architectures ['FooForCausalLM'] are not supported for now. Supported "
            "architectures: dict_keys(['A'])",
            "FooForCausalLM",
        ),
    ],
)
def test_an_unsupported_architecture_is_named_without_quotes_or_punctuation(line: str, arch: str) -> None:
    analysis = classify_text(line + "\n")
    assert analysis.error is not None and analysis.error.values["architectures"] == arch
    assert f"({arch})" in diagnose(analysis)[0].detail


@pytest.mark.parametrize(
    ("line", "title"),
    [
        ("huggingface_hub.errors.GatedRepoError: 401 Client Error. (Request ID: x)", "download was refused"),
        (
            "OSError: acme/none is not a local folder and is not a valid model identifier listed on "
            "'https://huggingface.co/models'",
            "does not name a model",
        ),
        (
            "RuntimeError: CUDA error: no kernel image is available for execution on the device",
            "not supported",
        ),
        (
            "RuntimeError: The NVIDIA driver on your system is too old (found version 11040).",
            "driver is too old",
        ),
        ("ModuleNotFoundError: No module named 'sgl_kernel'", "package is missing"),
    ],
)
def test_common_environment_failures_get_their_one_known_fix(line: str, title: str) -> None:
    analysis = classify_text(line + "\n")
    assert analysis.error is not None and analysis.error.error_class == "other"
    diagnosis = diagnose(analysis)[0]
    assert title in diagnosis.title
    assert diagnosis.suggestions and diagnosis.suggestions[0].why


@pytest.mark.parametrize("device", ["NPU", "HIP", "XPU"])
def test_out_of_memory_on_other_accelerators_is_an_out_of_memory(device: str) -> None:
    analysis = classify_text(f"RuntimeError: {device} out of memory. Tried to allocate 2.00 GiB\n")
    assert analysis.error is not None and analysis.error.error_class == "cuda_oom"
    assert analysis.error.values["tried_gib"] == 2.0


def test_a_bare_assertion_error_is_explained_by_the_line_it_asserted() -> None:
    analysis = classify_text(
        _log(
            "[2025-03-29 18:50:00 TP0] Load weight begin. avail mem=23.10 GB",
            "Traceback (most recent call last):",
            '  File "/opt/sglang/srt/layers/linear.py", line 642, in weight_loader',
            "    assert param_data.shape == loaded_weight.shape",
            "AssertionError",
            "[2025-03-29 18:56:25] Received sigquit from a child process. It usually means the child failed.",
        )
    )
    assert analysis.error is not None and analysis.error.error_class == "other"
    diagnosis = diagnose(analysis)[0]
    assert "(in linear.py): `assert param_data.shape == loaded_weight.shape`" in diagnosis.detail
    assert "--load-format" in diagnosis.suggestions[0].why


def test_a_hybrid_state_cache_too_small_for_one_request_is_named_as_such() -> None:
    analysis = classify_text(
        "RuntimeError: Hybrid (mamba/linear-attention) state cache is too small to serve any requests. "
        "max_mamba_cache_size=None, mamba_ratio=0.9, resulting max_num_reqs=0. Try: (1) reduce "
        "--max-running-requests, (2) increase --mem-fraction-static.\n"
    )
    assert analysis.error is not None and analysis.error.error_class == "not_enough_memory"
    assert analysis.error.values["max_num_reqs"] == 0
    diagnosis = diagnose(analysis)[0]
    assert diagnosis.title == "Not enough GPU memory for the Mamba state cache"
    assert "room for 0 requests" in diagnosis.detail
    assert [s.flag for s in diagnosis.suggestions][:2] == ["--max-running-requests", "--mem-fraction-static"]
    assert diagnosis.suggestions[1].why.startswith("Raise --mem-fraction-static")
