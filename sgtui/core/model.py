"""Model facts read from a Hugging Face config.json (and the checkpoint's weight bytes).

The fit engine needs the handful of shapes SGLang itself reads when it sizes its memory pools, plus the
checkpoint size. Everything here mirrors SGLang's own derivations (configs/model_config.py,
configs/qwen3_next.py, configs/mamba_utils.py, utils/hf_transformers/common.py): the text config of
multimodal wrappers, the context length, the full/linear and full/sliding layer splits. Reading weight
bytes never loads tensors: the index's ``metadata.total_size`` or the JSON headers of the safetensors
shards are enough.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sgtui.core.bounded import BoundedInputError, load_json
from sgtui.core.errors import UserError

CONTEXT_LENGTH_KEYS = (
    "max_sequence_length",
    "seq_length",
    "max_seq_len",
    "model_max_length",
    "max_position_embeddings",
)

DTYPE_BYTES = {
    "float32": 4,
    "float": 4,
    "fp32": 4,
    "float16": 2,
    "half": 2,
    "fp16": 2,
    "bfloat16": 2,
    "bf16": 2,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "int8": 1,
    "uint8": 1,
}

# safetensors header dtype names -> bytes per element (sub-byte types are packed into U8/I8 tensors).
_SAFETENSORS_BYTES = {
    "F64": 8,
    "I64": 8,
    "U64": 8,
    "F32": 4,
    "I32": 4,
    "U32": 4,
    "F16": 2,
    "BF16": 2,
    "I16": 2,
    "U16": 2,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "F8_E8M0": 1,
    "I8": 1,
    "U8": 1,
    "BOOL": 1,
}

# Architectures whose text layers mix full attention with Gated DeltaNet linear attention, where
# SGLang's Qwen3NextConfig.layers_block_type decides the split from full_attention_interval.
GDN_HYBRID_ARCHS = frozenset(
    {
        "Qwen3NextForCausalLM",
        "Qwen3_5ForCausalLM",
        "Qwen3_5ForConditionalGeneration",
        "Qwen3_5MoeForCausalLM",
        "Qwen3_5MoeForConditionalGeneration",
    }
)
GDN_HYBRID_MODEL_TYPES = frozenset(
    {"qwen3_next", "qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text"}
)

# SGLang's configs/model_config.py: is_hybrid_swa_model, per version family. Gemma2/3 are never hybrid.
_SWA_059 = frozenset(
    {
        "Llama4ForConditionalGeneration",
        "GptOssForCausalLM",
        "MiMoV2FlashForCausalLM",
        "MiMoV2MTP",
        "Step3p5ForCausalLM",
        "Step3p5MTP",
    }
)
_SWA_0511 = _SWA_059 | {"MiMoV2ForCausalLM", "Gemma4ForCausalLM", "Gemma4ForConditionalGeneration"}
_SWA_0523 = _SWA_0511 | {
    "BeamForCausalLM",
    "GraniteSWAForCausalLM",
    "GraniteMoeSWAForCausalLM",
    "Step3p7ForConditionalGeneration",
    "EmbeddingGemma2Model",
    "Gemma4UnifiedForConditionalGeneration",
    "LagunaForCausalLM",
    "MellumForCausalLM",
}
HYBRID_SWA_ARCHS = {"0.5.9": _SWA_059, "0.5.11": _SWA_0511, "0.5.23": _SWA_0523}

# A subset of SGLang's multimodal_model_archs (configs/model_config.py): the ones whose launches
# get the VLM mem-fraction adjustment and lose the piecewise/prefill CUDA graph.
MULTIMODAL_ARCHS = frozenset(
    {
        "Gemma3ForConditionalGeneration",
        "Gemma3nForConditionalGeneration",
        "Gemma4ForConditionalGeneration",
        "Glm4vForConditionalGeneration",
        "Glm4vMoeForConditionalGeneration",
        "KimiVLForConditionalGeneration",
        "KimiK25ForConditionalGeneration",
        "Llama4ForConditionalGeneration",
        "LlavaForConditionalGeneration",
        "LlavaLlamaForCausalLM",
        "LlavaQwenForCausalLM",
        "MiMoV2ForCausalLM",
        "Mistral3ForConditionalGeneration",
        "MllamaForConditionalGeneration",
        "PixtralForConditionalGeneration",
        "Qwen2VLForConditionalGeneration",
        "Qwen2_5_VLForConditionalGeneration",
        "Qwen3VLForConditionalGeneration",
        "Qwen3VLMoeForConditionalGeneration",
        "Qwen3_5ForConditionalGeneration",
        "Qwen3_5MoeForConditionalGeneration",
        "Qwen3OmniMoeForConditionalGeneration",
        "InternVLChatModel",
        "Step3VLForConditionalGeneration",
    }
)

# Multimodal wrappers SGLang serves text-only unless --enable-multimodal is given (model_config.py
# mm_disabled_models, 0.4.8 to 0.5.23): no VLM memory adjustment, no multimodal reserve for them.
MULTIMODAL_OFF_BY_DEFAULT = frozenset(
    {"Gemma3ForConditionalGeneration", "Llama4ForConditionalGeneration", "Step3VLForConditionalGeneration"}
)

# configs/model_config.py is_deepseek_nsa: these architectures with index_topk use DeepSeek sparse attention.
DSA_ARCHS = frozenset(
    {
        "DeepseekV3ForCausalLM",
        "DeepseekV32ForCausalLM",
        "DeepseekV3ForCausalLMNextN",
        "MistralLarge3ForCausalLM",
        "PixtralForConditionalGeneration",
        "GlmMoeDsaForCausalLM",
    }
)

# SGLang's piecewise_cuda_graph_disabled_model_archs (0.5.11).
PIECEWISE_DISABLED_ARCHS = frozenset(
    {
        "DeepseekV32ForCausalLM",
        "Qwen3NextForCausalLM",
        "GlmMoeDsaForCausalLM",
        "BailingMoeV2_5ForCausalLM",
        "LLaDAModelLM",
    }
)


class ModelError(UserError):
    """A config.json or model folder that cannot be read: the message names the file and the fix."""


@dataclass(frozen=True)
class LinearAttention:
    """Gated DeltaNet / linear-attention dimensions (Qwen3-Next, Qwen3.5/3.6)."""

    num_key_heads: int
    num_value_heads: int
    key_head_dim: int
    value_head_dim: int
    conv_kernel_dim: int
    ssm_dtype: str | None  # the config's mamba_ssm_dtype; SGLang falls back to float32


@dataclass(frozen=True)
class Mamba2:
    """Mamba2 mixer dimensions (NemotronH, Granite 4.0-H, Falcon-H1), as Mamba2StateShape reads them."""

    intermediate_size: int
    n_groups: int
    num_heads: int
    head_dim: int
    state_size: int
    conv_kernel: int
    ssm_dtype: str | None
    mamba_layers: int
    attention_layers: int


@dataclass(frozen=True)
class ModelFacts:
    """What SGLang reads from a model's config to size its memory pools, plus the checkpoint size."""

    source: str
    architecture: str
    model_type: str
    num_layers: int
    hidden_size: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    v_head_dim: int
    dtype: str  # the config's torch_dtype / dtype, lower-case ("bfloat16")
    context_length: int
    intermediate_size: int = 0
    vocab_size: int = 0
    tie_word_embeddings: bool = False
    # MLA (DeepSeek V2/V3, Kimi): the KV cell is (kv_lora_rank + qk_rope_head_dim) per layer, not per head.
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    # DeepSeek sparse attention (V3.2, GLM-5): an indexer key per token and layer next to the MLA latent.
    dsa_index_head_dim: int | None = None
    # MoE sizes, only for the weight estimate.
    num_experts: int = 0
    moe_intermediate_size: int = 0
    shared_expert_intermediate_size: int = 0
    # Sliding window: layer_types ("sliding_attention"/"full_attention") or an equivalent pattern.
    sliding_window: int | None = None
    layer_types: tuple[str, ...] = ()
    hybrid_layer_pattern: tuple[int, ...] = ()
    swa_num_kv_heads: int | None = None
    swa_head_dim: int | None = None
    swa_v_head_dim: int | None = None
    # Hybrid linear attention (GDN): every full_attention_interval-th layer holds KV.
    full_attention_interval: int | None = None
    linear: LinearAttention | None = None
    mamba2: Mamba2 | None = None
    # MTP / NextN draft layers shipped with the checkpoint.
    mtp_num_hidden_layers: int = 0
    num_nextn_predict_layers: int = 0
    # Quantization as the checkpoint declares it.
    quant_method: str | None = None
    kv_cache_quant_algo: str | None = None
    # compressed-tensors declares an FP8 KV cache as kv_cache_scheme, which SGLang honours only in the
    # 0.5.23 family (CompressedTensorsConfig.kv_cache_quant_algo); 0.5.11 keeps the model dtype.
    kv_cache_quant_from_scheme: bool = False
    # Vision tower (multimodal wrappers).
    has_vision: bool = False
    vision_layers: int = 0
    vision_hidden_size: int = 0
    vision_num_hidden_layers: int | None = None  # what SGLang's VLM mfs adjustment reads (24 when absent)
    # Checkpoint bytes (all shards, unsharded) and whether they were estimated from the config.
    weight_bytes: int = 0
    weights_estimated: bool = True

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None and self.qk_rope_head_dim is not None

    @property
    def is_gdn_hybrid(self) -> bool:
        return self.linear is not None and self.full_attention_interval is not None

    @property
    def is_hybrid_linear(self) -> bool:
        """Some layers keep a fixed-size recurrent state (GDN or Mamba2) instead of a KV cache."""
        return self.is_gdn_hybrid or self.mamba2 is not None

    @property
    def is_multimodal(self) -> bool:
        return self.architecture in MULTIMODAL_ARCHS

    @property
    def mtp_layers(self) -> int:
        return self.mtp_num_hidden_layers or self.num_nextn_predict_layers

    @property
    def full_attention_layers(self) -> int:
        """Layers that hold a full KV cache (all of them for a plain transformer)."""
        if self.is_gdn_hybrid:
            assert self.full_attention_interval is not None
            return sum(1 for i in range(self.num_layers) if (i + 1) % self.full_attention_interval == 0)
        if self.mamba2 is not None:
            return self.mamba2.attention_layers
        return self.num_layers

    @property
    def linear_attention_layers(self) -> int:
        """Layers with recurrent state (GDN or Mamba2)."""
        if self.mamba2 is not None:
            return self.mamba2.mamba_layers
        return self.num_layers - self.full_attention_layers if self.is_gdn_hybrid else 0

    def is_hybrid_swa(self, family: str) -> bool:
        """Whether SGLang (this version family) splits the KV pool into full and sliding-window parts."""
        return self.architecture in HYBRID_SWA_ARCHS.get(family, _SWA_0523)

    def swa_layer_split(self) -> tuple[int, int]:
        """(full layers, sliding-window layers) the way SGLang's get_hybrid_layer_ids splits them."""
        n = self.num_layers
        if self.architecture == "Llama4ForConditionalGeneration":
            full = sum(1 for i in range(n) if (i + 1) % 4 == 0)
            return full, n - full
        if self.hybrid_layer_pattern:
            pattern = self.hybrid_layer_pattern[:n]
            return sum(1 for x in pattern if x == 0), sum(1 for x in pattern if x == 1)
        if self.layer_types:
            types = self.layer_types[:n]
            return types.count("full_attention"), types.count("sliding_attention")
        return n, 0

    @property
    def weight_gib(self) -> float:
        return self.weight_bytes / 2**30


def _int(cfg: dict[str, Any], key: str, source: str) -> int:
    value = cfg.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        if value is None:
            raise ModelError(f"{source}: missing required field {key!r} (a Hugging Face config.json has it)")
        raise ModelError(f"{source}: field {key!r} must be an integer, got {value!r}")
    return value


def _opt_int(cfg: dict[str, Any], key: str) -> int | None:
    value = cfg.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# Fields that transformers' config classes fill in when a config.json leaves them out, for the model
# types whose published configs rely on it (google/gemma-3-4b-it's text_config has no head counts;
# gemma-3-12b's has no head_dim, which is 256 there, not hidden/heads = 240).
MODEL_TYPE_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma3_text": {
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "max_position_embeddings": 131072,
        "vocab_size": 262208,
    },
    "gemma2": {"num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256},
}

# The names other config families use for the shapes SGLang reads through transformers' attribute
# maps (ChatGLM's num_layers/multi_query_group_num/kv_channels, GPT-style n_layer/n_head/n_embd)
# and ModelConfig.get_total_num_kv_heads's list (Falcon n_head_kv/num_kv_heads, Step3).
_ALIASES: dict[str, tuple[str, ...]] = {
    "num_hidden_layers": ("num_hidden_layers", "num_layers", "n_layer", "n_layers"),
    "hidden_size": ("hidden_size", "n_embd", "d_model"),
    "num_attention_heads": ("num_attention_heads", "n_head", "n_heads"),
    "num_key_value_heads": (
        "n_head_kv",
        "num_kv_heads",
        "num_key_value_heads",
        "multi_query_group_num",
        "num_attention_groups",
    ),
    "head_dim": ("head_dim", "kv_channels"),
}


def _text_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """SGLang reads shapes from hf_text_config: the nested text_config / llm_config of VLM wrappers,
    with the defaults transformers would apply for fields the file leaves out."""
    text = cfg
    for key in ("text_config", "llm_config", "language_config"):
        sub = cfg.get(key)
        if isinstance(sub, dict) and any(k in sub for k in _ALIASES["num_hidden_layers"]):
            text = sub
            break
    model_type = str(text.get("model_type") or "")
    if not model_type and cfg.get("model_type") == "gemma3" and text is not cfg:
        model_type = "gemma3_text"
    defaults = MODEL_TYPE_DEFAULTS.get(model_type)
    return {**defaults, **text} if defaults else text


def _field(text: dict[str, Any], name: str) -> Any:
    """The first of a shape's known names that the config sets."""
    for key in _ALIASES.get(name, (name,)):
        value = text.get(key)
        if value is not None:
            return value
    return None


def _dtype_name(value: Any) -> str:
    if not isinstance(value, str):
        return "float32"  # SGLang's _get_and_verify_dtype treats a missing dtype as float32
    name = value.lower().removeprefix("torch.")
    return name if name in DTYPE_BYTES else "float32"


def context_length_of(text: dict[str, Any]) -> int:
    """SGLang's get_context_length: the first known key, times rope_scaling.factor unless ignored."""
    factor: float = 1
    rope = text.get("rope_scaling")
    if isinstance(rope, dict) and rope:
        factor = rope.get("factor", 1) or 1
        if "original_max_position_embeddings" in rope or rope.get("rope_type") == "llama3":
            factor = 1
    for key in CONTEXT_LENGTH_KEYS:
        value = text.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return int(factor * value)
    return 2048


def _quantization(cfg: dict[str, Any], text: dict[str, Any]) -> tuple[str | None, str | None, bool]:
    """(method, kv_cache_quant_algo, whether that algo comes from a compressed-tensors kv_cache_scheme)."""
    qc = cfg.get("quantization_config") or text.get("quantization_config") or cfg.get("compression_config")
    if not isinstance(qc, dict):
        return None, None, False
    method = qc.get("quant_method") or qc.get("quant_algo")
    kv_algo = qc.get("kv_cache_quant_algo")
    from_scheme = False
    if kv_algo is None and isinstance(qc.get("kv_cache_scheme"), dict):
        kv_algo = "FP8" if qc["kv_cache_scheme"].get("num_bits") == 8 else None
        from_scheme = kv_algo is not None
    return (str(method).lower() if method else None), (str(kv_algo) if kv_algo else None), from_scheme


def _linear_attention(
    text: dict[str, Any], arch: str, model_type: str
) -> tuple[int | None, LinearAttention | None]:
    if arch not in GDN_HYBRID_ARCHS and model_type not in GDN_HYBRID_MODEL_TYPES:
        return None, None
    keys = ("linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim")
    if not all(isinstance(text.get(k), int) for k in keys):
        return None, None
    interval = _opt_int(text, "full_attention_interval") or 4
    ssm = text.get("mamba_ssm_dtype")
    return interval, LinearAttention(
        num_key_heads=text["linear_num_key_heads"],
        num_value_heads=text["linear_num_value_heads"],
        key_head_dim=text["linear_key_head_dim"],
        value_head_dim=text["linear_value_head_dim"],
        conv_kernel_dim=_opt_int(text, "linear_conv_kernel_dim") or 4,
        ssm_dtype=_dtype_name(ssm) if isinstance(ssm, str) else None,
    )


def _mamba2(text: dict[str, Any], arch: str, layers: int, hidden: int) -> Mamba2 | None:
    """Mamba2 dims and the mamba/attention layer split, per family's config names."""
    ssm = text.get("mamba_ssm_dtype")
    ssm_dtype = _dtype_name(ssm) if isinstance(ssm, str) else None
    if arch == "NemotronHForCausalLM" or "hybrid_override_pattern" in text or "mamba_num_heads" in text:
        pattern = text.get("hybrid_override_pattern")
        blocks = text.get("layers_block_type")
        if isinstance(blocks, list):
            kinds = ["M" if b == "mamba" else "*" if b == "attention" else "-" for b in blocks]
        elif isinstance(pattern, str):
            kinds = list(pattern)
        else:
            return None
        heads, head_dim = _opt_int(text, "mamba_num_heads"), _opt_int(text, "mamba_head_dim")
        state = _opt_int(text, "ssm_state_size")
        if not (heads and head_dim and state):
            return None
        return Mamba2(
            intermediate_size=heads * head_dim,
            n_groups=_opt_int(text, "n_groups") or 1,
            num_heads=heads,
            head_dim=head_dim,
            state_size=state,
            conv_kernel=_opt_int(text, "conv_kernel") or 4,
            ssm_dtype=ssm_dtype,
            mamba_layers=kinds.count("M"),
            attention_layers=kinds.count("*"),
        )
    heads, head_dim = _opt_int(text, "mamba_n_heads"), _opt_int(text, "mamba_d_head")
    state = _opt_int(text, "mamba_d_state")
    if not (heads and head_dim and state):
        return None
    intermediate = _opt_int(text, "mamba_d_ssm") or (_opt_int(text, "mamba_expand") or 2) * hidden
    if arch.startswith("FalconH1"):
        mamba_layers = attention_layers = layers  # every Falcon-H1 layer has both mixers
    else:
        types = text.get("layer_types")
        if not isinstance(types, list):
            types = ["attention" if (i + 1) % 6 == 0 else "mamba" for i in range(layers)]
        mamba_layers, attention_layers = types.count("mamba"), types.count("attention")
    return Mamba2(
        intermediate_size=intermediate,
        n_groups=_opt_int(text, "mamba_n_groups") or 1,
        num_heads=heads,
        head_dim=head_dim,
        state_size=state,
        conv_kernel=_opt_int(text, "mamba_d_conv") or 4,
        ssm_dtype=ssm_dtype,
        mamba_layers=mamba_layers,
        attention_layers=attention_layers,
    )


def model_facts_from_config(
    cfg: dict[str, Any], *, source: str = "config.json", weight_bytes: int | None = None
) -> ModelFacts:
    """Model facts from a parsed config.json; `weight_bytes` when the checkpoint size is known."""
    if not isinstance(cfg, dict):
        raise ModelError(f"{source}: expected a JSON object at the top level")
    text = _text_config(cfg)
    archs = cfg.get("architectures") or text.get("architectures") or []
    arch = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else ""
    model_type = str(text.get("model_type") or cfg.get("model_type") or "")
    shapes = {name: _field(text, name) for name in _ALIASES}
    layers = _int(shapes, "num_hidden_layers", source)
    hidden = _int(shapes, "hidden_size", source)
    heads = _int(shapes, "num_attention_heads", source)
    if heads <= 0 or layers <= 0 or hidden <= 0:
        raise ModelError(f"{source}: layer, hidden and head counts must be positive integers")
    kv_heads = 1 if text.get("multi_query") is True else (_opt_int(shapes, "num_key_value_heads") or heads)
    head_dim = _opt_int(shapes, "head_dim") or hidden // heads
    v_head_dim = _opt_int(text, "v_head_dim") or head_dim
    kv_lora_rank = _opt_int(text, "kv_lora_rank")
    qk_rope = _opt_int(text, "qk_rope_head_dim")
    if kv_lora_rank is not None:
        # MLA keeps one latent per token; v_head_dim there is the attention output width.
        v_head_dim = head_dim
    interval, linear = _linear_attention(text, arch, model_type)
    mamba2 = None if linear is not None else _mamba2(text, arch, layers, hidden)
    experts = (
        _opt_int(text, "num_experts")
        or _opt_int(text, "n_routed_experts")
        or _opt_int(text, "num_local_experts")
        or 0
    )
    layer_types = text.get("layer_types")
    pattern = text.get("hybrid_layer_pattern")
    quant_method, kv_algo, kv_from_scheme = _quantization(cfg, text)
    vision = cfg.get("vision_config")
    has_vision = isinstance(vision, dict)
    vision = vision if isinstance(vision, dict) else {}
    facts = ModelFacts(
        source=source,
        architecture=arch,
        model_type=model_type,
        num_layers=layers,
        hidden_size=hidden,
        num_attention_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        v_head_dim=v_head_dim,
        dtype=_dtype_name(text.get("torch_dtype") or text.get("dtype") or cfg.get("torch_dtype")),
        context_length=context_length_of(text),
        intermediate_size=_opt_int(text, "intermediate_size") or 4 * hidden,
        vocab_size=_opt_int(text, "vocab_size") or _opt_int(cfg, "vocab_size") or 0,
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", text.get("tie_word_embeddings", False))),
        kv_lora_rank=kv_lora_rank,
        qk_rope_head_dim=qk_rope if kv_lora_rank is not None else None,
        dsa_index_head_dim=_opt_int(text, "index_head_dim")
        if arch in DSA_ARCHS and "index_topk" in text
        else None,
        num_experts=experts,
        moe_intermediate_size=_opt_int(text, "moe_intermediate_size")
        or ((_opt_int(text, "intermediate_size") or 0) if experts else 0),
        shared_expert_intermediate_size=_opt_int(text, "shared_expert_intermediate_size") or 0,
        sliding_window=_opt_int(text, "sliding_window"),
        layer_types=tuple(str(x) for x in layer_types) if isinstance(layer_types, list) else (),
        hybrid_layer_pattern=tuple(int(x) for x in pattern) if isinstance(pattern, list) else (),
        swa_num_kv_heads=_opt_int(text, "swa_num_key_value_heads"),
        swa_head_dim=_opt_int(text, "swa_head_dim"),
        swa_v_head_dim=_opt_int(text, "swa_v_head_dim"),
        full_attention_interval=interval,
        linear=linear,
        mamba2=mamba2,
        mtp_num_hidden_layers=_opt_int(text, "mtp_num_hidden_layers") or 0,
        num_nextn_predict_layers=_opt_int(text, "num_nextn_predict_layers") or 0,
        quant_method=quant_method,
        kv_cache_quant_algo=kv_algo,
        kv_cache_quant_from_scheme=kv_from_scheme,
        has_vision=has_vision,
        vision_layers=(
            _opt_int(vision, "num_hidden_layers")
            or _opt_int(vision, "depth")
            or _opt_int(vision, "vt_num_hidden_layers")
            or 0
        )
        if has_vision
        else 0,
        # Kimi-K2.5's vision config names them vt_*; its config class exposes them under the usual
        # names, which is what SGLang's VLM mem-fraction adjustment reads (a real log shows 27 x 1152).
        vision_hidden_size=(_opt_int(vision, "hidden_size") or _opt_int(vision, "vt_hidden_size") or 0)
        if has_vision
        else 0,
        vision_num_hidden_layers=_opt_int(vision, "num_hidden_layers")
        or _opt_int(vision, "vt_num_hidden_layers"),
    )
    if weight_bytes is not None:
        return _replace(facts, weight_bytes=weight_bytes, weights_estimated=False)
    return _replace(facts, weight_bytes=estimate_weight_bytes(facts), weights_estimated=True)


def _replace(facts: ModelFacts, **changes: Any) -> ModelFacts:
    return replace(facts, **changes)


def attention_params(m: ModelFacts) -> int:
    """Parameters of one full-attention block (Qwen3.5/Next gate the output, doubling q_proj)."""
    h = m.hidden_size
    if m.is_mla:
        assert m.kv_lora_rank is not None and m.qk_rope_head_dim is not None
        heads, nope = m.num_attention_heads, m.head_dim
        return (
            h * (m.kv_lora_rank + m.qk_rope_head_dim)
            + m.kv_lora_rank * heads * 2 * nope
            + h * heads * (nope + m.qk_rope_head_dim)
            + heads * nope * h
        )
    q_out = m.num_attention_heads * m.head_dim * (2 if m.is_gdn_hybrid else 1)
    return (
        h * q_out
        + h * m.num_kv_heads * (m.head_dim + m.v_head_dim)
        + m.num_attention_heads * m.v_head_dim * h
    )


def mlp_params(m: ModelFacts) -> int:
    """Parameters of one MLP (all experts of an MoE layer, plus the shared expert and the router)."""
    h = m.hidden_size
    if m.num_experts and m.moe_intermediate_size:
        return (
            m.num_experts * (3 * h * m.moe_intermediate_size + h) + 3 * h * m.shared_expert_intermediate_size
        )
    return 3 * h * m.intermediate_size


def linear_attention_params(m: ModelFacts) -> int:
    """Parameters of one Gated DeltaNet block (in_proj_qkvz, in_proj_ba, conv1d, out_proj) or Mamba2 mixer."""
    if m.mamba2 is not None:
        mb = m.mamba2
        conv_dim = mb.intermediate_size + 2 * mb.n_groups * mb.state_size
        in_proj = m.hidden_size * (mb.intermediate_size + conv_dim + mb.num_heads)
        return in_proj + conv_dim * mb.conv_kernel + mb.intermediate_size * m.hidden_size
    if m.linear is None:
        return 0
    la, h = m.linear, m.hidden_size
    key_dim, value_dim = la.num_key_heads * la.key_head_dim, la.num_value_heads * la.value_head_dim
    conv_dim = 2 * key_dim + value_dim
    return (
        h * (conv_dim + value_dim)
        + h * 2 * la.num_value_heads
        + conv_dim * la.conv_kernel_dim
        + value_dim * h
    )


def estimate_param_count(m: ModelFacts) -> int:
    """A parameter count from the shapes: embeddings, attention, MLP/MoE, linear attention, vision tower."""
    embed = m.vocab_size * m.hidden_size * (1 if m.tie_word_embeddings else 2)
    total = embed + m.full_attention_layers * attention_params(m) + m.num_layers * mlp_params(m)
    total += m.linear_attention_layers * linear_attention_params(m)
    if m.has_vision and m.vision_layers and m.vision_hidden_size:
        total += 12 * m.vision_layers * m.vision_hidden_size**2
    return total


def mtp_weight_bytes(m: ModelFacts) -> int:
    """Bytes of the checkpoint's own MTP/NextN layers (0 without them).

    A Qwen3.5/Next MTP module shares embed_tokens and lm_head with the target (models/qwen3_5_mtp.py),
    leaving its decoder layers plus the 2h->h fc; a DeepSeek-style NextN layer carries its own
    embedding and head."""
    if not m.mtp_layers:
        return 0
    h = m.hidden_size
    params = m.mtp_layers * (attention_params(m) + mlp_params(m)) + 2 * h * h
    if not m.is_gdn_hybrid:
        params += 2 * m.vocab_size * h
    per_param = 2.0 if m.weights_estimated else m.weight_bytes / max(1, estimate_param_count(m))
    return int(params * per_param)


def estimate_weight_bytes(m: ModelFacts) -> int:
    """Parameter count times the checkpoint's bytes per parameter (FP8/INT8 checkpoints: 1, 4-bit: 0.5)."""
    params = estimate_param_count(m)
    method = m.quant_method or ""
    if method in (
        "awq",
        "gptq",
        "awq_marlin",
        "gptq_marlin",
        "bitsandbytes",
        "mxfp4",
        "nvfp4",
        "modelopt_fp4",
    ):
        return params // 2
    if "fp8" in method or method in ("w8a8_int8", "w8a8_fp8", "compressed-tensors", "modelopt"):
        return params
    return params * DTYPE_BYTES.get(m.dtype, 2)


def _read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ModelError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise ModelError(f"{path}: is a folder, expected a file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelError(f"{path}: cannot read it ({exc})") from None
    try:
        return load_json(text, str(path))
    except BoundedInputError as exc:
        raise ModelError(str(exc)) from None
    except json.JSONDecodeError as exc:
        raise ModelError(f"{path}: line {exc.lineno}, column {exc.colno}: bad JSON ({exc.msg})") from None


def safetensors_header_bytes(path: Path) -> int:
    """Sum of the tensor sizes named in one safetensors file's header (8-byte length + JSON)."""
    try:
        with path.open("rb") as fh:
            raw_len = fh.read(8)
            if len(raw_len) != 8:
                raise ModelError(f"{path}: too short to be a safetensors file")
            (n,) = struct.unpack("<Q", raw_len)
            if n > 100 * 2**20:
                raise ModelError(f"{path}: safetensors header claims {n} bytes; the file looks corrupt")
            header = load_json(fh.read(n), str(path), max_bytes=n)
    except OSError as exc:
        raise ModelError(f"{path}: cannot read it ({exc})") from None
    except BoundedInputError as exc:
        raise ModelError(str(exc)) from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise ModelError(
            f"{path}: the safetensors header is not valid JSON; the file looks corrupt"
        ) from None
    total = 0
    for name, entry in header.items():
        if name == "__metadata__" or not isinstance(entry, dict):
            continue
        offsets = entry.get("data_offsets")
        if isinstance(offsets, list) and len(offsets) == 2:
            total += int(offsets[1]) - int(offsets[0])
            continue
        count = 1
        for dim in entry.get("shape", []):
            count *= int(dim)
        total += count * _SAFETENSORS_BYTES.get(str(entry.get("dtype")), 2)
    return total


def checkpoint_weight_bytes(folder: Path) -> int | None:
    """The checkpoint's real size: the index's total_size, else the shards' headers (None: neither)."""
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        data = _read_json(index)
        total = data.get("metadata", {}).get("total_size") if isinstance(data, dict) else None
        if isinstance(total, int | float) and total > 0:
            return int(total)
    shards = sorted(folder.glob("*.safetensors"))
    if not shards:
        return None
    hf_shards = [p for p in shards if not p.name.startswith("consolidated")]
    shards = hf_shards or shards  # Mistral folders ship both layouts; count one
    return sum(safetensors_header_bytes(p) for p in shards)


def _with_modelopt_quant(cfg: Any, folder: Path) -> Any:
    """ModelOpt checkpoints (nvidia/*-FP8) describe their quantization, including an FP8 KV cache, in
    hf_quant_config.json next to config.json; SGLang's ModelOpt config reads it from there."""
    sidecar = folder / "hf_quant_config.json"
    if not isinstance(cfg, dict) or cfg.get("quantization_config") or not sidecar.is_file():
        return cfg
    data = _read_json(sidecar)
    quant = data.get("quantization") if isinstance(data, dict) else None
    if not isinstance(quant, dict):
        return cfg
    return {**cfg, "quantization_config": {"quant_method": "modelopt", **quant}}


def load_model_facts(path: str | Path) -> ModelFacts:
    """Model facts from a config.json or a model folder (which also gives the real weight bytes)."""
    p = Path(path).expanduser()
    if p.is_dir():
        config = p / "config.json"
        if not config.is_file():
            raise ModelError(f"{p}: no config.json in this folder; pass the model folder or its config.json")
        return model_facts_from_config(
            _with_modelopt_quant(_read_json(config), p),
            source=str(config),
            weight_bytes=checkpoint_weight_bytes(p),
        )
    if not p.exists():
        raise ModelError(f"{p}: file not found; pass a config.json or a model folder")
    weight_bytes = checkpoint_weight_bytes(p.parent) if p.name == "config.json" else None
    cfg = _with_modelopt_quant(_read_json(p), p.parent)
    return model_facts_from_config(cfg, source=str(p), weight_bytes=weight_bytes)
