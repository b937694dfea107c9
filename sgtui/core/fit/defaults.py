"""SGLang's GPU-dependent defaults, per release window: the tier table and the automatic
--mem-fraction-static.

Read from server_args.py `_handle_gpu_memory_settings` (0.5.3 to 0.5.18, `reserve_for_graph_mb` from
0.5.16) and arg_groups/memory_hook.py `handle_gpu_memory_settings` (0.5.19 on); the prefill-graph
rules from `_handle_piecewise_cuda_graph` (0.5.10-0.5.13), `_apply_cuda_graph_compatibility` (0.5.14
on) and arg_groups/cuda_graph_hook.py (0.5.19 on). Every difference between releases is a named rule
of the window (`sgtui.core.sglang.windows`); the eras before the formula are in legacy.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from sgtui.core.fit.legacy import legacy_auto_mfs
from sgtui.core.flags import LaunchSpec
from sgtui.core.model import MULTIMODAL_OFF_BY_DEFAULT, PIECEWISE_DISABLED_ARCHS, ModelFacts
from sgtui.core.sglang.windows import Window, window_for

__all__ = [
    "Defaults",
    "legacy_auto_mfs",
    "multimodal_enabled",
    "prefill_graph_enabled",
    "prefill_graph_sizes",
    "resolve_defaults",
    "runtime_multimodal_factor",
]


@dataclass(frozen=True)
class Defaults:
    """What SGLang resolves before loading anything: tier sizes and the automatic mfs."""

    chunked_prefill_size: int
    cuda_graph_max_bs: int
    prefill_graph: bool  # piecewise (0.5.5-0.5.14) or breakable (0.5.15 on) prefill CUDA graph
    prefill_graph_sizes: int
    reserved_mib: float  # what the automatic mfs leaves out, MiB
    activation_mib: float  # the part of it meant for activations and CUDA graphs (no floor, no spec)
    mem_fraction_static_auto: float


def _window(window: Window | str) -> Window:
    return window if isinstance(window, Window) else window_for(window)


def _tier(gpu_mib: int, tp: int, window: Window) -> tuple[int, int]:
    """(chunked prefill, decode graph max bs) for this GPU, by the window's tier table."""
    table = window.rules.tier_table
    if table == "0.4":  # 0.4.0-0.4.7 server_args.__post_init__ (0.4.0: bs 8 at any TP)
        return (2048, 8 if tp < 4 else 80) if gpu_mib < 25_000 else (8192, 160)
    if table == "class":  # 0.4.7.post1-0.5.2
        if gpu_mib < 35 * 1024:
            return 2048, 8 if tp < 4 else 80
        return (8192, 160) if gpu_mib < 160 * 1024 else (16384, 160)
    if gpu_mib < 20 * 1024:
        return 2048, 8
    if gpu_mib < 35 * 1024:
        chunk, small_tp, large_tp = window.rules.small_tier
        return chunk, small_tp if tp < 4 else large_tp
    if gpu_mib < 60 * 1024:
        return 4096, 32 if tp < 4 else 160
    if gpu_mib < 160 * 1024:
        return 8192, 256 if tp < 4 else 512
    return 16384, 512


def prefill_graph_sizes(max_tokens: int) -> int:
    """How many token counts the piecewise/breakable prefill graph captures up to max_tokens."""
    sizes = [
        *range(4, 33, 4),
        *range(48, 257, 16),
        *range(288, 513, 32),
        *range(576, 1025, 64),
        *range(1280, 4097, 256),
        *range(4608, max_tokens + 1, 512),
    ]
    return sum(1 for s in sizes if s <= max_tokens)


# configs/model_config.py multimodal_breakable_cuda_graph_supported_model_archs (0.5.16 on; a subset).
BREAKABLE_OK_MULTIMODAL = frozenset(
    {
        "Qwen3_5ForConditionalGeneration",
        "Qwen3_5MoeForConditionalGeneration",
        "KimiK25ForConditionalGeneration",
    }
)


def multimodal_enabled(spec: LaunchSpec, model: ModelFacts) -> bool:
    """Whether SGLang serves this model as multimodal: a VLM architecture, not --language-only, and
    for Gemma3/Llama4/Step3-VL only with --enable-multimodal."""
    if not model.is_multimodal or spec.language_only:
        return False
    return model.architecture not in MULTIMODAL_OFF_BY_DEFAULT or bool(spec.values.get("--enable-multimodal"))


def runtime_multimodal_factor(spec: LaunchSpec, model: ModelFacts, window: Window | str) -> float:
    """0.4.0 to 0.4.8 shrink every multimodal launch's fraction in ModelRunner, a set one too
    ("Automatically reduce --mem-fraction-static to X because this is a multimodal model"): x0.95
    up to 0.4.5, x0.90 from 0.4.6. 0.4.9 dropped it; 0.4.10 adjusts only the automatic value."""
    shrink = _window(window).rules.multimodal_shrink
    return shrink if shrink != 1.0 and multimodal_enabled(spec, model) else 1.0


def _breakable_off(spec: LaunchSpec, model: ModelFacts, off: frozenset[str]) -> bool:
    """Whether the window's breakable-graph compatibility rules turn the prefill graph off."""
    multimodal = multimodal_enabled(spec, model)
    checks = {
        "mla": model.is_mla,
        "mla-non-dsa": model.is_mla and not model.dsa_index_head_dim,
        "nemotron-h": model.architecture.startswith("NemotronH"),
        "dp-attention": spec.enable_dp_attention or (spec.attn_dp_size or 1) > 1,
        "pp": spec.pp_size > 1,
        "multimodal": multimodal,
        "multimodal-unlisted": multimodal and model.architecture not in BREAKABLE_OK_MULTIMODAL,
    }
    return any(checks[name] for name in off)


def prefill_graph_enabled(spec: LaunchSpec, model: ModelFacts, window: Window | str) -> bool:
    """Whether the prefill CUDA graph is captured (and so reserved for in the automatic mfs).

    opt-in (0.5.5-0.5.9): only with --enable-piecewise-cuda-graph. piecewise (0.5.10-0.5.14): on by
    default, off for some architectures, VLMs, DP attention, torch.compile, PP and the hierarchical
    cache. breakable (0.5.15 on, CUDA): on by default, off by the window's `breakable_off` rules and
    for DeepSeek-V4."""
    rules = _window(window).rules
    kind = rules.prefill_graph
    if kind == "none":
        return False
    if kind == "opt-in":
        return spec.enable_piecewise_cuda_graph and not spec.disable_piecewise_cuda_graph
    if spec.disable_piecewise_cuda_graph:
        return False
    if spec.disable_cuda_graph and rules.disable_cuda_graph_stops_prefill_graph:
        return False
    if kind == "breakable":
        if model.architecture.startswith("DeepseekV4"):
            return False
        return not _breakable_off(spec, model, rules.breakable_off)
    return not (
        model.architecture in PIECEWISE_DISABLED_ARCHS
        or multimodal_enabled(spec, model)
        or spec.enable_dp_attention
        or spec.enable_torch_compile
        or spec.pp_size > 1
        or spec.enable_hierarchical_cache
    )


def _vlm_factor(model: ModelFacts) -> float:
    """server_args.adjust_mem_fraction_for_vlm: 0.95 times a clamp on the ViT's size vs ViT-L/14."""
    layers = model.vision_num_hidden_layers or 24
    hidden = model.vision_hidden_size or 1024
    ratio = layers * hidden**2 / (24 * 1024**2)
    return 0.95 * max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0)))


def _graph_tokens(spec: LaunchSpec, model: ModelFacts, window: Window, chunk: int) -> int:
    """The prefill graph's largest token count: the chunk (MLA: 2048, or min(8192, chunk) in 0.5.23),
    capped by --max-total-tokens (0.5.10 on) and, in 0.5.13-0.5.16, by an explicit --context-length."""
    rules = window.rules
    if model.is_mla:
        tokens = 2048 if rules.mla_prefill_graph_tokens == "2048" else min(8192, chunk)
    else:
        tokens = chunk
    if spec.max_total_tokens is not None and rules.prefill_graph != "opt-in":
        tokens = min(tokens, spec.max_total_tokens)
    if rules.prefill_graph_tokens_capped_by_context and spec.context_length is not None:
        tokens = min(tokens, spec.context_length)
    return tokens


def resolve_defaults(spec: LaunchSpec, model: ModelFacts, gpu_mib: int, window: Window | str) -> Defaults:
    """The tier sizes and SGLang's automatic mem-fraction-static for this launch on this GPU."""
    w = _window(window)
    rules = w.rules
    chunk_default, bs_default = _tier(gpu_mib, spec.tp_size, w)
    chunk = spec.chunked_prefill_size if spec.chunked_prefill_size is not None else chunk_default
    max_bs = spec.cuda_graph_max_bs
    if max_bs is None:
        max_bs = bs_default
        if rules.decode_bs_clipped_to_max_running and spec.max_running_requests is not None:
            max_bs = min(max_bs, spec.max_running_requests)
    prefill_graph = prefill_graph_enabled(spec, model, w)
    n_sizes = prefill_graph_sizes(_graph_tokens(spec, model, w, chunk)) if prefill_graph else 0

    activation = 512 + 1.5 * max(chunk if chunk > 0 else spec.max_prefill_tokens, 2048)
    if not (rules.decode_graph_reserve_needs_graph and spec.disable_cuda_graph):
        activation += 2 * max_bs
    dp_attention = spec.enable_dp_attention or (spec.attn_dp_size or 1) > 1
    if dp_attention:
        dp = (spec.attn_dp_size or spec.dp_size) if rules.dp_reserve_uses_attn_dp else spec.dp_size
        activation += 3 * max_bs * dp
        if max_bs > 300:
            activation += 1.5 * max_bs * dp
    if prefill_graph and rules.piecewise_reserve == "per-size":
        # 8 MiB per captured size; an MLA backend reserves a flat 1.5 GiB instead (0.5.10 on)
        activation += 1536 if model.is_mla and rules.prefill_graph != "opt-in" else 8 * n_sizes
    reserved = activation + spec.tp_size * spec.pp_size / 8 * 1024
    if gpu_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    algo = (spec.speculative_algorithm or "").upper()
    if algo == "STANDALONE":
        reserved += rules.standalone_reserve_mib
    elif algo and algo != "NGRAM":
        reserved += rules.spec_reserve_mib
    if prefill_graph and rules.piecewise_reserve == "after-floor":
        max_tokens = rules.piecewise_max_tokens_default or chunk
        reserved += max_tokens // rules.piecewise_reserve_divisor  # 0.5.5-0.5.7: after the floor
    deepep = (spec.values.get("--moe-a2a-backend") or "") == "deepep"
    if rules.deepep_reserve_mib and deepep and not spec.disable_cuda_graph:
        reserved += rules.deepep_reserve_mib
    mfs = round((gpu_mib - reserved) / gpu_mib, 3)
    legacy = legacy_auto_mfs(spec, gpu_mib, rules)
    if legacy is not None:
        mfs = legacy
    if rules.vlm_mfs_adjust and multimodal_enabled(spec, model) and model.has_vision:
        mfs = mfs * _vlm_factor(model)
    return Defaults(
        chunked_prefill_size=chunk,
        cuda_graph_max_bs=max_bs,
        prefill_graph=prefill_graph,
        prefill_graph_sizes=n_sizes,
        reserved_mib=reserved,
        activation_mib=activation,
        mem_fraction_static_auto=mfs,
    )
