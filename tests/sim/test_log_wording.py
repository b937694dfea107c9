"""The stand-in's log lines carry each SGLang version's wording, and its plans follow the fit report."""

from __future__ import annotations

from types import SimpleNamespace

from sgtui.core.logs import classify_text
from sgtui.sim import logfmt
from sgtui.sim.plan import PoolPlan, capture_sizes, exception_text, model_folder, radix_conflict, shard_count


def test_prefixes_carry_the_tp_rank_only_when_there_are_several_ranks() -> None:
    assert logfmt.prefix(1, 2, now=0).endswith(" TP1] ")
    assert not logfmt.prefix(0, 1, now=0).endswith("TP0] ")
    assert logfmt.prefix(None, 4, now=0).endswith("] ") and "TP" not in logfmt.prefix(None, 4, now=0)


def test_old_and_new_versions_word_the_startup_lines_differently() -> None:
    assert logfmt.init_dist_end("0.5.9", 1.5, 0.99).startswith("Init torch distributed ends. elapsed=1.50 s")
    assert logfmt.init_dist_end("0.5.23", 1.5, 0.99) == "Memory baseline taken. mem usage=0.99 GB"
    assert "dtype=torch.bfloat16, " in logfmt.load_weight_end("0.5.9", 8, "X", "bfloat16", 21.5, 25.5)
    assert "dtype=" not in logfmt.load_weight_end("0.5.11", 8, "X", "bfloat16", 21.5, 25.5)
    assert "dtype: torch.bfloat16, #tokens" in logfmt.kv_line("0.5.23", 10, 1.0, 1.0, "bfloat16")
    assert logfmt.graph_begin("0.5.9", 3.0).startswith("Capture cuda graph begin. This can take up to")
    assert logfmt.graph_begin("0.5.23", 3.0).startswith("Capture target decode CUDA graph begin.")


def test_a_written_startup_reads_back_through_sgtuis_classifier() -> None:
    lines = [
        logfmt.prefix(None, 2, 0) + logfmt.server_args_line({"--model-path": "/m", "--tp-size": 2}),
        logfmt.prefix(0, 2, 0) + logfmt.init_dist_end("0.5.9", 1.2, 0.99),
        logfmt.prefix(0, 2, 0) + logfmt.load_weight_begin(47.0),
        logfmt.shard_bar(0, 4, 0) + "\r" + logfmt.shard_bar(4, 4, 8),
        logfmt.prefix(0, 2, 0)
        + logfmt.load_weight_end("0.5.9", 8, "LlamaForCausalLM", "bfloat16", 21.5, 25.5),
        logfmt.prefix(0, 2, 0) + logfmt.kv_line("0.5.9", 379420, 5.79, 5.79, "bfloat16"),
        logfmt.prefix(0, 2, 0) + logfmt.pool_end(6.98),
        logfmt.prefix(0, 2, 0) + logfmt.scheduler_summary(379420, 4096, 16384, 8, 32768, 5.48),
        logfmt.prefix(None, 2, 0) + logfmt.READY_LINE,
    ]
    analysis = classify_text("\n".join(lines) + "\n")
    assert analysis.outcome == "ready"
    assert analysis.facts["weight_mem_gib"] == 25.5
    assert analysis.facts["max_total_num_tokens"] == 379420


def test_a_traceback_ends_with_the_error_and_names_the_version_specific_raise_site() -> None:
    old = logfmt.traceback_lines("/v/site", "pool", "0.5.9", "RuntimeError: Not enough memory.")
    new = logfmt.traceback_lines("/v/site", "pool", "0.5.23", "RuntimeError: Not enough memory.")
    assert old[0] == "Traceback (most recent call last):" and old[-1] == "RuntimeError: Not enough memory."
    assert any("model_runner_kv_cache_mixin.py" in line for line in old)
    assert any("pool_configurator.py" in line for line in new)


def test_errors_from_the_fit_engine_get_the_exception_type_sglang_raises() -> None:
    assert (
        exception_text("RuntimeError: Not enough memory.", "RuntimeError")
        == "RuntimeError: Not enough memory."
    )
    assert exception_text("Not enough memory.", "RuntimeError") == "RuntimeError: Not enough memory."
    assert exception_text("Loaded weights leave no GPU memory", "RuntimeError").startswith("ValueError: ")


def test_only_0_5_11_refuses_mtp_with_the_radix_cache_on_a_hybrid_model() -> None:
    facts = SimpleNamespace(architecture="Qwen3_5ForConditionalGeneration", is_gdn_hybrid=True)
    spec = SimpleNamespace(speculative_algorithm="NEXTN", mamba_strategy=None, disable_radix_cache=False)
    assert radix_conflict(spec, facts, "0.5.11") is not None
    assert radix_conflict(spec, facts, "0.5.9") is None
    spec.disable_radix_cache = True
    assert radix_conflict(spec, facts, "0.5.11") is None


def test_captured_batch_sizes_stop_at_max_running_requests() -> None:
    spec = SimpleNamespace(cuda_graph_max_bs=None)
    assert capture_sizes(spec, {"max_running_requests": 8}) == [1, 2, 4, 8]
    assert capture_sizes(spec, {"max_running_requests": 10}) == [1, 2, 4, 8, 10]


def test_pool_sizes_come_from_the_fit_report() -> None:
    facts = SimpleNamespace(
        context_length=262144,
        full_attention_layers=16,
        is_gdn_hybrid=True,
        linear=None,
        architecture="Qwen3_5ForConditionalGeneration",
        num_layers=64,
        mtp_layers=1,
    )
    spec = SimpleNamespace(
        page_size=None, speculative_num_draft_tokens=4, speculative_algorithm="NEXTN", tp_size=2
    )
    report = {
        "max_total_num_tokens": 379550,
        "kv_cell_bytes": 32768,
        "max_running_requests": 8,
        "context_length": 32768,
        "mamba": {"max_mamba_cache_size": 8, "state_gib": 0.6452, "spec_state_gib": 2.2939},
    }
    plan = PoolPlan.from_report(report, facts, spec)
    assert round(plan.k_gib, 2) == 5.79  # (tokens + page) * cell / 2 bytes, as SGLang prints K size
    assert plan.mamba is not None and plan.mamba[0] == 8
    assert 14.4 < plan.total_gib < 14.6  # K + V + Mamba state + the spec-decoding state + req_to_token


def test_models_resolve_by_folder_name_from_the_built_in_catalogue() -> None:
    folder = model_folder("/anything/Qwen3.6-27B")
    assert folder is not None and (folder / "config.json").is_file()
    assert shard_count(folder) == 11
    assert model_folder("/models/llama-3.1-8b-instruct") is not None
    assert model_folder("/models/Unknown-1B") is None


def test_server_args_are_dumped_as_a_dict_from_0_5_23_and_as_the_dataclass_before() -> None:
    values = {"--model-path": "/models/Qwen3.6-27B", "--tp-size": 2, "--mem-fraction-static": 0.85}
    old = logfmt.server_args_line(values, "0.5.9")
    new = logfmt.server_args_line(values, "0.5.23")
    assert old.startswith("server_args=ServerArgs(model_path='/models/Qwen3.6-27B'")
    assert new.startswith("server_args={'model_path': '/models/Qwen3.6-27B'")
    for line in (old, new):
        facts = classify_text(f"[2026-01-01 10:00:00] {line}\n").facts
        assert facts["tp_size"] == 2
        assert facts["mem_fraction_static"] == 0.85
