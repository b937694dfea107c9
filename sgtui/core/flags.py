"""SGLang launch flags <-> a typed launch spec, per SGLang version.

(Skeleton: LaunchSpec's fields are the contract the fit engine and runner read; parsing is being built.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class LaunchSpec:
    """The flags that decide memory and startup behaviour, typed and with SGLang's defaults left as None
    where SGLang itself picks a default later (so the fit engine can tell "unset" from "set")."""

    model_path: str | None = None
    tp_size: int = 1
    dp_size: int = 1
    pp_size: int = 1
    enable_dp_attention: bool = False
    mem_fraction_static: float | None = None
    context_length: int | None = None
    max_running_requests: int | None = None
    max_total_tokens: int | None = None
    page_size: int | None = None
    chunked_prefill_size: int | None = None
    max_prefill_tokens: int = 16384
    cuda_graph_max_bs: int | None = None
    disable_cuda_graph: bool = False
    enable_piecewise_cuda_graph: bool = False
    disable_piecewise_cuda_graph: bool = False
    enable_torch_compile: bool = False
    kv_cache_dtype: str = "auto"
    dtype: str = "auto"
    quantization: str | None = None
    attention_backend: str | None = None
    speculative_algorithm: str | None = None  # canonical upper-case; NEXTN stays NEXTN (alias of EAGLE)
    speculative_num_steps: int | None = None
    speculative_eagle_topk: int | None = None
    speculative_num_draft_tokens: int | None = None
    speculative_draft_model_path: str | None = None
    mamba_strategy: str | None = None  # --mamba-scheduler-strategy (<=0.5.11) / --mamba-radix-cache-strategy
    mamba_ssm_dtype: str | None = None
    max_mamba_cache_size: int | None = None
    mamba_full_memory_ratio: float = 0.9
    swa_full_tokens_ratio: float = 0.8
    disable_hybrid_swa_memory: bool = False
    disable_radix_cache: bool = False
    disable_overlap_schedule: bool = False
    enable_hierarchical_cache: bool = False
    language_only: bool = False
    host: str = "127.0.0.1"
    port: int = 30000
    values: dict[str, Any] = field(default_factory=dict)  # every flag given: canonical dashed name -> value
