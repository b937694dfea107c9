"""The typed launch spec the fit engine and the runner read, built from flag values."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from sgtui.core.sglang.flag_messages import unknown_flag_error
from sgtui.core.sglang.flag_table import Flag, TableLike, any_table, resolve
from sgtui.core.sglang.flag_values import coerce_value


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
    attn_dp_size: int | None = None  # 0.5.23 --attn-dp-size: DP attention groups (implies DP attention)
    values: dict[str, Any] = field(default_factory=dict)  # every flag given: canonical dashed name -> value


_SPEC_FIELDS: dict[str, str] = {
    "--model-path": "model_path",
    "--tp-size": "tp_size",
    "--dp-size": "dp_size",
    "--pp-size": "pp_size",
    "--enable-dp-attention": "enable_dp_attention",
    "--attn-dp-size": "attn_dp_size",
    "--mem-fraction-static": "mem_fraction_static",
    "--context-length": "context_length",
    "--max-running-requests": "max_running_requests",
    "--max-total-tokens": "max_total_tokens",
    "--page-size": "page_size",
    "--chunked-prefill-size": "chunked_prefill_size",
    "--max-prefill-tokens": "max_prefill_tokens",
    "--cuda-graph-max-bs": "cuda_graph_max_bs",
    "--cuda-graph-max-bs-decode": "cuda_graph_max_bs",
    "--disable-cuda-graph": "disable_cuda_graph",
    "--disable-decode-cuda-graph": "disable_cuda_graph",
    "--enable-piecewise-cuda-graph": "enable_piecewise_cuda_graph",
    "--disable-piecewise-cuda-graph": "disable_piecewise_cuda_graph",
    "--disable-prefill-cuda-graph": "disable_piecewise_cuda_graph",
    "--enable-torch-compile": "enable_torch_compile",
    "--kv-cache-dtype": "kv_cache_dtype",
    "--dtype": "dtype",
    "--quantization": "quantization",
    "--attention-backend": "attention_backend",
    "--speculative-algorithm": "speculative_algorithm",
    "--speculative-num-steps": "speculative_num_steps",
    "--speculative-eagle-topk": "speculative_eagle_topk",
    "--speculative-num-draft-tokens": "speculative_num_draft_tokens",
    "--speculative-draft-model-path": "speculative_draft_model_path",
    "--mamba-scheduler-strategy": "mamba_strategy",
    "--mamba-radix-cache-strategy": "mamba_strategy",
    "--mamba-ssm-dtype": "mamba_ssm_dtype",
    "--max-mamba-cache-size": "max_mamba_cache_size",
    "--mamba-full-memory-ratio": "mamba_full_memory_ratio",
    "--swa-full-tokens-ratio": "swa_full_tokens_ratio",
    "--disable-hybrid-swa-memory": "disable_hybrid_swa_memory",
    "--disable-radix-cache": "disable_radix_cache",
    "--disable-overlap-schedule": "disable_overlap_schedule",
    "--enable-hierarchical-cache": "enable_hierarchical_cache",
    "--language-only": "language_only",
    "--host": "host",
    "--port": "port",
}
_SPEC_TYPES = {f.name: f for f in fields(LaunchSpec)}


def flag_for(name: str, version: TableLike = None) -> Flag:
    """The flag an exact option string (canonical or alias) names in `version`'s table, else in any
    release; FlagError otherwise."""
    table = resolve(version)
    canonical = table.index.get(name) or any_table().index.get(name)
    if canonical is None:
        raise unknown_flag_error(name, table)
    return table.flag(canonical)


def canonical_name(key: str, version: TableLike = None) -> str:
    """A dashed or underscored flag name (with or without leading dashes) -> its canonical dashed name."""
    option = "--" + key.lstrip("-").replace("_", "-")
    return flag_for(option, version).name


def spec_from_values(values: Mapping[str, Any], version: TableLike = None) -> LaunchSpec:
    """A LaunchSpec from canonical-name values (as `parse_argv` or a profile gives them).

    Values are checked and typed again, so a mapping built by hand (the UI form) gets the same errors
    as argv. Keys may be aliases; `values` on the spec keeps them under canonical names. A None value
    means "not set" and is dropped.
    """
    table = resolve(version)
    typed: dict[str, Any] = {}
    for key, raw in values.items():
        if raw is None:
            continue
        name = canonical_name(key, table)
        if table.version is not None and not table.has(name):
            raise unknown_flag_error(name, table)
        typed[name] = coerce_value(name, raw, table)
    kwargs: dict[str, Any] = {}
    for name, value in typed.items():
        attr = _SPEC_FIELDS.get(name)
        if attr is None:
            continue
        if attr in ("disable_cuda_graph", "disable_piecewise_cuda_graph", "enable_dp_attention"):
            kwargs[attr] = kwargs.get(attr, False) or bool(value)
        else:
            kwargs[attr] = value
    if typed.get("--cuda-graph-backend-decode") == "disabled":
        kwargs["disable_cuda_graph"] = True
    if typed.get("--cuda-graph-backend-prefill") == "disabled":
        kwargs["disable_piecewise_cuda_graph"] = True
    if (kwargs.get("attn_dp_size") or 1) > 1:
        kwargs["enable_dp_attention"] = True
    algorithm = kwargs.get("speculative_algorithm")
    if isinstance(algorithm, str):
        kwargs["speculative_algorithm"] = algorithm.upper()
    for attr, value in list(kwargs.items()):
        if value is None and _SPEC_TYPES[attr].default is not None:
            del kwargs[attr]  # a None for a field SGLang defaults (e.g. --kv-cache-dtype) keeps the default
    return LaunchSpec(**kwargs, values=typed)
