"""The exact texts SGLang raises when a launch does not fit, as each release window words them.

They are reproduced verbatim (with the exception class, as the traceback's last line shows it) so that
the fit panel, `sgtui explain` and a real log can be matched against each other.
"""

from __future__ import annotations

import math


class PredictedError(Exception):
    """SGLang would stop here with `text`."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def not_enough_memory(text: str, mfs: float) -> str:
    """The pool-size RuntimeError, as the window words it (`Rules.not_enough_memory_text`): "plain"
    up to 0.5.2 (no value), "self.server_args" in 0.5.3-0.5.9 (`init_memory_pool` prints the f-string
    `{self.server_args.mem_fraction_static=}`), "mfs" from 0.5.10 (pool_configurator.py
    MemoryPoolConfig prints `mem_fraction_static=`)."""
    base = "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."
    if text == "plain":
        return base
    value = (
        f"self.server_args.mem_fraction_static={mfs!r}"
        if text == "self.server_args"
        else f"mem_fraction_static={mfs!r}"
    )
    return f"{base} Current value: {value}"


def loaded_weights(mfs: float, available: float, pre: float) -> str:
    """_profile_available_bytes (0.5.14 on) when nothing is left after the weights and the draft."""
    minimum = 1 - available / pre
    suggested = math.ceil(minimum * 1000) / 1000
    return (
        "ValueError: Loaded weights leave no GPU memory for the KV cache under "
        f"--mem-fraction-static={mfs!r}. Raise --mem-fraction-static above {suggested:.3f} "
        f"(minimum viable = 1 - available/pre = {minimum:.4f}). If using speculative decoding, "
        "draft weights are now counted."
    )


def mamba_cache_too_small(k: int, rest_gib: float, slot_bytes: int) -> str:
    """handle_max_mamba_cache (0.5.13 on) when K comes out non-positive."""
    return (
        "RuntimeError: Not enough GPU memory for hybrid (mamba/linear-attention) state cache. "
        f"Computed max_mamba_cache_size={k} (total_rest_memory={rest_gib:.2f} GB, "
        f"mamba_cache_per_req={slot_bytes / (1 << 20):.2f} MB). Try: (1) reduce --max-running-requests, "
        "(2) increase --mem-fraction-static, (3) reduce --speculative-num-draft-tokens, or "
        "(4) use GPUs with more memory."
    )


def mamba_no_requests(k: int, ratio: int, requests: int) -> str:
    """_resolve_max_num_reqs (0.5.13 on) when the Mamba cap leaves no request."""
    return (
        "RuntimeError: Hybrid (mamba/linear-attention) state cache is too small to serve any requests. "
        f"max_mamba_cache_size={k}, mamba_ratio={ratio}, resulting max_num_reqs={requests}. "
        "Try: (1) reduce --max-running-requests, (2) increase --mem-fraction-static, or "
        "(3) use GPUs with more memory."
    )


def swa_pool_too_small(swa_tokens: int, window: int, page: int) -> str:
    """HybridSWAPoolConfigurator (0.5.16 on): a sliding-window pool that can never admit a request."""
    return (
        f"ValueError: SWA pool ({swa_tokens} tokens) cannot hold even one request: the prefill admission "
        f"floor is sliding_window_size ({window}) + page_size ({page}). Increase --swa-full-tokens-ratio or "
        "the total KV budget."
    )


def swa_cap_no_room(swa_tokens: int, swa_gib: float, available_gib: float) -> str:
    """SWARequestCapPoolConfigurator (0.5.22 on): the request-sized sliding-window pool leaves nothing for
    the full-attention pool."""
    return (
        f"RuntimeError: SWA pool cap ({swa_tokens} tokens, {swa_gib:.2f} GiB) leaves no room for the full "
        f"KV pool within the available {available_gib:.2f} GiB. Reduce --max-running-requests, lower "
        "SGLANG_SWA_EVICTION_INTERVAL, or increase --mem-fraction-static."
    )


def max_running_zero() -> str:
    """The assertion in managers/tp_worker.py (old releases)."""
    return "AssertionError: max_running_request is zero"


def radix_conflict(arch: str) -> str:
    """server_args._handle_mamba_radix_cache (0.5.10-0.5.13): speculative decoding + radix cache +
    no_buffer."""
    return (
        f"ValueError: Speculative decoding for {arch} is not compatible with radix cache when using "
        "--mamba-scheduler-strategy no_buffer.To use radix cache with speculative decoding, please use "
        "--mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1."
    )


def context_too_long(ctx: int, derived: int) -> str:
    """configs/model_config.py _derive_context_length without SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN."""
    return (
        f"ValueError: Warning: User-specified context_length ({ctx}) is greater than the derived "
        f"context_length ({derived}). This may lead to incorrect model outputs or CUDA errors. Note that the "
        "derived context_length may differ from max_position_embeddings in the model's config. To allow "
        "overriding this maximum, set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"
    )


def unbalanced(pre: float, local: float) -> str:
    """The TP memory-balance check (model_runner.py; 0.5.23 distributed/bootstrap.py): the poorest
    rank's free memory under 90 % of another's. SGLang prints the raw floats; these are rounded."""
    return (
        "RuntimeError: The memory capacity is unbalanced. Some GPUs may be occupied by other processes. "
        f"pre_model_load_memory={pre:.2f}, local_gpu_memory={local:.2f}, "
        f"local_gpu_memory * 0.9={local * 0.9:.2f}"
    )


CUDA_OOM = "torch.OutOfMemoryError: CUDA out of memory."
