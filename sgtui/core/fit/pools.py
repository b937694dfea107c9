"""What one GPU holds per token and per request, as SGLang sizes it: the runtime and KV dtypes, the
weights as loaded, the KV cell (MHA/GQA, MLA, sliding-window split, hybrid full layers) and the
linear-attention state slot.

Sources (SGLang 0.5.11 unless noted; what changed between releases is a rule of the window):
pool_configurator.py DefaultPoolConfigurator and HybridSWAPoolConfigurator, configs/model_config.py
get_num_kv_heads, configs/mamba_utils.py (Mamba2StateShape, mamba_cache_per_req), configs/qwen3_next.py
(layers_block_type), mem_cache/memory_pool.py (the +page rows and K+1 slots).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from sgtui.core.errors import UserError
from sgtui.core.gpus import is_rocm, preset_name
from sgtui.core.model import DTYPE_BYTES, ModelFacts, estimate_param_count, mtp_weight_bytes
from sgtui.core.model.names import named_quantization
from sgtui.core.model.quant import QuantScheme
from sgtui.core.model.weights import quantized_weight_bytes
from sgtui.core.sglang.flags import LaunchSpec
from sgtui.core.sglang.rules import Rules

KV_DTYPE_BYTES: dict[str, float] = {
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "fp8": 1,
    "bf16": 2,
    "bfloat16": 2,
    "float16": 2,
    "fp16": 2,
    "fp4_e2m1": 0.5 + 1 / 16,  # packed nibbles plus one fp8 scale per 16 values
}


def model_dtype(spec: LaunchSpec, model: ModelFacts) -> str:
    """SGLang's _get_and_verify_dtype: --dtype, else the config's; float32 configs run in fp16
    (bf16 for Gemma)."""
    chosen = (spec.dtype or "auto").lower()
    if chosen != "auto":
        return {"half": "float16", "float": "float32", "bf16": "bfloat16", "fp16": "float16"}.get(
            chosen, chosen
        )
    if model.dtype == "float32":
        return "bfloat16" if model.model_type.startswith("gemma") else "float16"
    return model.dtype


# Bytes per linear-layer parameter when SGLang quantizes an unquantized checkpoint on load (--quantization).
_ONLINE_QUANT_BYTES = {"fp8": 1.0, "w8a8_fp8": 1.0, "w8a8_int8": 1.0, "awq": 0.5, "gptq": 0.5, "mxfp4": 0.5}


def loaded_scheme(spec: LaunchSpec, model: ModelFacts) -> QuantScheme | None:
    """The scheme the weights are held in: the checkpoint's, else what --quantization makes of an
    unquantized checkpoint on load, else the one the name announces (priced when the config is silent)."""
    if model.quant is not None or model.quant_method is not None:
        return model.quant
    online = _ONLINE_QUANT_BYTES.get((spec.quantization or "").lower())
    if online is not None:
        return QuantScheme(str(spec.quantization), online)
    named = named_quantization(model_name(spec, model))
    return named[1] if named is not None and model.weights_estimated else None


def model_name(spec: LaunchSpec, model: ModelFacts) -> str:
    """The name a person gave the model: --model-path, else where its config came from."""
    return spec.model_path or model.source


def weight_bytes_on_gpu(spec: LaunchSpec, model: ModelFacts) -> tuple[int, bool]:
    """(bytes, estimated) of the target model as loaded: the checkpoint without its MTP/NextN layers,
    converted to the runtime dtype (a float32 checkpoint runs in 16 bits) or quantized on load by
    --quantization (embeddings stay)."""
    total = model.weight_bytes
    if not model.weights_estimated:
        total -= mtp_weight_bytes(model)  # the target skips the checkpoint's MTP/NextN tensors
    if model.quant_method is not None:
        return total, model.weights_estimated
    named = named_quantization(model_name(spec, model))
    if named is not None and model.weights_estimated and not spec.quantization:
        # the name says quantized, the config does not: price the name's scheme (a warning says so)
        return quantized_weight_bytes(model, named[1]), True
    stored = DTYPE_BYTES.get(model.dtype, 2)
    runtime = DTYPE_BYTES.get(model_dtype(spec, model), 2)
    total = total * runtime // stored
    online = _ONLINE_QUANT_BYTES.get((spec.quantization or "").lower())
    if online is None:
        return total, model.weights_estimated
    params = max(1, estimate_param_count(model))
    embed = model.vocab_size * model.hidden_size * (1 if model.tie_word_embeddings else 2)
    embed_share = min(1.0, embed / params)
    return int(total * embed_share + total * (1 - embed_share) * online / runtime), True


def kv_dtype(spec: LaunchSpec, model: ModelFacts, rules: Rules) -> tuple[str, float]:
    """(name, bytes per element) of the KV cache: --kv-cache-dtype, else FP8 when the checkpoint says so
    (model_runner.init_memory_pool reads kv_cache_quant_algo from 0.5.3 on, older releases ignore it;
    a compressed-tensors kv_cache_scheme counts from 0.5.18)."""
    chosen = (spec.kv_cache_dtype or "auto").lower()
    if chosen == "auto":
        honoured = (
            rules.kv_scheme_honoured if model.kv_cache_quant_from_scheme else rules.kv_quant_algo_honoured
        )
        if (model.kv_cache_quant_algo or "").upper() == "FP8" and honoured:
            return "fp8_e4m3", 1
        name = model_dtype(spec, model)
        return name, DTYPE_BYTES.get(name, 2)
    if chosen not in KV_DTYPE_BYTES:
        raise UserError(
            f"--kv-cache-dtype {spec.kv_cache_dtype!r}: unknown; "
            "use auto, fp8_e4m3, fp8_e5m2, bf16 or fp4_e2m1"
        )
    return chosen, KV_DTYPE_BYTES[chosen]


def attention_dp(spec: LaunchSpec) -> int:
    """DP-attention groups: --attn-dp-size (0.5.23), else --dp-size under --enable-dp-attention."""
    if spec.attn_dp_size:
        return spec.attn_dp_size
    return spec.dp_size if spec.enable_dp_attention else 1


def attention_tp(spec: LaunchSpec) -> int:
    """The attention TP size: tp, divided by the DP-attention groups."""
    return max(1, spec.tp_size // attention_dp(spec))


def _layers_per_stage(n: int, pp: int) -> int:
    return math.ceil(n / pp) if pp > 1 else n


@dataclass(frozen=True)
class KvLayout:
    """Bytes per token of one GPU's KV pool, and how they split when SGLang keeps a sliding-window pool."""

    cell_bytes: float  # per token of max_total_num_tokens (F*nf + r*S*ns for hybrid SWA)
    kv_heads_per_gpu: int
    kv_layers: int  # layers whose KV lives in the main (full) pool
    k_bytes_per_token_layer: float  # for the predicted "K size" log value
    v_bytes_per_token_layer: float
    swa: bool = False
    swa_layers: int = 0
    swa_k_bytes_per_token_layer: float = 0
    swa_v_bytes_per_token_layer: float = 0
    all_swa: bool = False


def hybrid_swa_enabled(spec: LaunchSpec, model: ModelFacts, rules: Rules) -> bool:
    """Whether this launch gets a separate sliding-window pool.

    server_args / model_config per release: before 0.5.8 gpt-oss forces --disable-hybrid-swa-memory
    and Llama4 needs --hybrid-kvcache-ratio (so neither splits by default); 0.5.8 turns it off for
    gpt-oss under the trtllm_mha backend or speculative decoding, 0.5.9-0.5.10 under trtllm_mha only,
    and 0.5.11 on keeps it; MiMo-V2 drops it under the hierarchical cache (0.5.7 on). Gemma2/3 never
    split (is_hybrid_swa_model leaves them out)."""
    if spec.disable_hybrid_swa_memory or not model.is_hybrid_swa(rules.swa_archs):
        return False
    arch = model.architecture
    if arch.startswith("MiMoV2") and spec.enable_hierarchical_cache:
        return False  # server_args turns the split off for MiMo-V2 under the hierarchical cache
    gpt_oss = arch == "GptOssForCausalLM"
    if rules.swa_split == "none":
        return not (gpt_oss or arch.startswith("Llama4"))
    if gpt_oss and rules.swa_split != "always":
        trtllm = (spec.attention_backend or "").lower() == "trtllm_mha"
        return not (trtllm or (rules.swa_split == "gpt-oss-trtllm-spec" and bool(spec.speculative_algorithm)))
    return True


# GPU presets whose SGLang default DSA backend keeps the raw MLA row for an FP8 KV cache: Blackwell
# (trtllm) and AMD (triton); Hopper's flashmla_kv stores scales and a bf16 rope part beside it.
_RAW_DSA_ROW_GPUS = ("B200", "B300", "GB200", "GB300", "RTX-PRO-6000", "RTX-5090", "MI")


def _dsa_fp8_row_bytes(spec: LaunchSpec, model: ModelFacts, gpu_name: str) -> int | None:
    """Bytes per layer of a DeepSeek-sparse-attention FP8 row as 0.5.23 prices it
    (kv_cache_configurator.calculate_mla_kv_cache_dim): 512 fp8 + a fp32 scale per 128 + the rope part
    in bf16 (656), unless the DSA backends keep the raw 576-byte row (trtllm, tilelang on both
    sides, and the Blackwell and AMD defaults). None when the raw row applies."""
    assert model.kv_lora_rank is not None and model.qk_rope_head_dim is not None
    backends = {
        str(spec.values.get(f"--dsa-{phase}-backend") or "").lower() for phase in ("prefill", "decode")
    }
    if "trtllm" in backends or backends == {"tilelang"}:
        return None
    preset = (preset_name(gpu_name) or gpu_name).upper()
    if backends == {""} and preset.startswith(_RAW_DSA_ROW_GPUS):
        return None
    if is_rocm(gpu_name):
        return None  # on ROCm every DSA backend reads the raw row
    rank = model.kv_lora_rank
    return rank + rank // 128 * 4 + model.qk_rope_head_dim * 2


def kv_layout(spec: LaunchSpec, model: ModelFacts, rules: Rules, elem: float, gpu_name: str = "") -> KvLayout:
    """MHA/GQA heads per GPU (never below 1), MLA's latent, the SWA split, or only the full layers
    of a GDN hybrid. `gpu_name` picks 0.5.23's default DSA backend (and so its FP8 row size)."""
    t = attention_tp(spec)
    if model.is_mla:
        assert model.kv_lora_rank is not None and model.qk_rope_head_dim is not None
        layers = _layers_per_stage(model.num_layers, spec.pp_size)
        dim = model.kv_lora_rank + model.qk_rope_head_dim
        if (
            model.dsa_index_head_dim
            and rules.dsa_fp8_row_priced
            and kv_dtype(spec, model, rules)[0] == "fp8_e4m3"
        ):
            # older releases price the raw row whatever the pool stores; newer ones price what it stores
            dim = _dsa_fp8_row_bytes(spec, model, gpu_name) or dim
        indexer = 0
        if model.dsa_index_head_dim:
            # uint8 index keys plus one fp32 scale per 128 values (pool_configurator._compute_cell_size)
            indexer = (model.dsa_index_head_dim + model.dsa_index_head_dim // 128 * 4) * layers
        return KvLayout(
            cell_bytes=dim * layers * elem + indexer,
            kv_heads_per_gpu=1,
            kv_layers=layers,
            k_bytes_per_token_layer=dim * elem,
            v_bytes_per_token_layer=0,
        )
    kvh = max(1, model.num_kv_heads // t)
    k_bytes, v_bytes = kvh * model.head_dim * elem, kvh * model.v_head_dim * elem
    if hybrid_swa_enabled(spec, model, rules):
        n_full, n_swa = model.swa_layer_split()
        if n_swa > 0:
            swa_kvh = max(1, (model.swa_num_kv_heads or model.num_kv_heads) // t)
            swa_k = swa_kvh * (model.swa_head_dim or model.head_dim) * elem
            swa_v = swa_kvh * (model.swa_v_head_dim or model.swa_head_dim or model.v_head_dim) * elem
            all_swa = n_full == 0
            # before 0.5.9 set_num_tokens_hybrid_swa split a token count priced at the full layers'
            # size, so sliding-window layers with fewer heads or a smaller head_dim still cost as much
            swa_priced = swa_k + swa_v if rules.swa_priced_by_own_layers else k_bytes + v_bytes
            cell = (
                (swa_k + swa_v) * n_swa
                if all_swa
                else (k_bytes + v_bytes) * n_full + spec.swa_full_tokens_ratio * swa_priced * n_swa
            )
            return KvLayout(
                cell_bytes=cell,
                kv_heads_per_gpu=kvh,
                kv_layers=n_full,
                k_bytes_per_token_layer=k_bytes,
                v_bytes_per_token_layer=v_bytes,
                swa=True,
                swa_layers=n_swa,
                swa_k_bytes_per_token_layer=swa_k,
                swa_v_bytes_per_token_layer=swa_v,
                all_swa=all_swa,
            )
    layers = _layers_per_stage(model.full_attention_layers, spec.pp_size)
    return KvLayout(
        cell_bytes=(k_bytes + v_bytes) * layers,
        kv_heads_per_gpu=kvh,
        kv_layers=layers,
        k_bytes_per_token_layer=k_bytes,
        v_bytes_per_token_layer=v_bytes,
    )


@dataclass(frozen=True)
class StateShape:
    """One request slot of Gated DeltaNet state on one GPU."""

    conv_dim_per_gpu: int
    conv_kernel: int
    ssm_numel_per_layer: int
    ssm_dtype: str
    ssm_bytes: int
    linear_layers: int

    @property
    def conv_bytes_per_layer(self) -> int:
        return self.conv_dim_per_gpu * (self.conv_kernel - 1) * 2  # conv state is bf16

    @property
    def ssm_bytes_per_layer(self) -> int:
        return self.ssm_numel_per_layer * self.ssm_bytes

    @property
    def slot_bytes(self) -> int:
        return (self.conv_bytes_per_layer + self.ssm_bytes_per_layer) * self.linear_layers


_SSM_DTYPES = {"float32": 4, "fp32": 4, "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2}


def _ssm_dtype(spec: LaunchSpec, config_dtype: str | None) -> tuple[str, int]:
    """--mamba-ssm-dtype, else the config's mamba_ssm_dtype, else float32 (configs/mamba_utils.py)."""
    name = (spec.mamba_ssm_dtype or config_dtype or "float32").lower()
    if name not in _SSM_DTYPES:
        raise UserError(
            f"--mamba-ssm-dtype {spec.mamba_ssm_dtype!r}: unknown; use float32, bfloat16 or float16"
        )
    name = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}.get(name, name)
    return name, _SSM_DTYPES[name]


def state_shape(spec: LaunchSpec, model: ModelFacts, rules: Rules) -> StateShape | None:
    """The per-slot recurrent state of a GDN or Mamba2 hybrid (None for models without one). Before
    0.5.9 --mamba-ssm-dtype defaulted to float32 and the config's mamba_ssm_dtype was not read."""
    if not rules.mamba_ssm_dtype_from_config and spec.mamba_ssm_dtype is None:
        spec = replace(spec, mamba_ssm_dtype="float32")
    t = attention_tp(spec)
    layers = _layers_per_stage(model.linear_attention_layers, spec.pp_size)
    if model.mamba2 is not None:
        mb = model.mamba2
        groups = mb.n_groups if mb.n_groups % t == 0 else mb.n_groups + (t - mb.n_groups)
        conv_dim = mb.intermediate_size + 2 * groups * mb.state_size
        ssm_name, ssm_bytes = _ssm_dtype(spec, mb.ssm_dtype)
        return StateShape(
            conv_dim_per_gpu=conv_dim // t,
            conv_kernel=mb.conv_kernel,
            ssm_numel_per_layer=(mb.num_heads // t) * mb.head_dim * mb.state_size,
            ssm_dtype=ssm_name,
            ssm_bytes=ssm_bytes,
            linear_layers=layers,
        )
    la = model.linear
    if la is None or not model.is_gdn_hybrid:
        return None
    nk = la.num_key_heads
    if nk % t:
        nk = math.ceil(nk / t) * t
    conv_dim = la.value_head_dim * la.num_value_heads + 2 * nk * la.key_head_dim
    ssm_name, ssm_bytes = _ssm_dtype(spec, la.ssm_dtype)
    return StateShape(
        conv_dim_per_gpu=conv_dim // t,
        conv_kernel=la.conv_kernel_dim,
        ssm_numel_per_layer=(la.num_value_heads // t) * la.value_head_dim * la.key_head_dim,
        ssm_dtype=ssm_name,
        ssm_bytes=ssm_bytes,
        linear_layers=layers,
    )
