"""What SGLang reads from a model's config to size its memory pools: the facts and the architecture lists.

Everything here mirrors SGLang's own derivations (configs/model_config.py, configs/qwen3_next.py,
configs/mamba_utils.py): the text config of multimodal wrappers, the full/linear and full/sliding layer
splits. config.py builds a `ModelFacts` from a config.json, weights.py estimates the checkpoint's bytes,
checkpoint.py reads the real ones.
"""

from __future__ import annotations

from dataclasses import dataclass

from sgtui.core.errors import UserError
from sgtui.core.model.quant import QuantScheme

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

# SGLang's configs/model_config.py: is_hybrid_swa_model, named by the release that has the list (0.5.9
# up to 0.5.10, 0.5.11 up to 0.5.13, 0.5.23's from 0.5.14, a superset of 0.5.14's). Gemma2/3 are never hybrid.
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
    q_lora_rank: int | None = None  # MLA's low-rank query (DeepSeek V3, Kimi), for the weights estimate
    qk_nope_head_dim: int | None = None
    mla_v_head_dim: int | None = None
    qk_rope_head_dim: int | None = None
    # DeepSeek sparse attention (V3.2, GLM-5): an indexer key per token and layer next to the MLA latent.
    dsa_index_head_dim: int | None = None
    # MoE sizes, only for the weight estimate.
    num_experts: int = 0
    moe_intermediate_size: int = 0
    shared_expert_intermediate_size: int = 0
    dense_layers: int = 0  # first_k_dense_replace: leading layers with a dense MLP in an MoE model
    # NemotronH's hybrid_override_pattern gives each layer one block: "E" MoE, "-" MLP (else None:
    # every layer has an MLP, dense_layers of them dense); its MLPs are up/down with relu^2 (2 matrices)
    moe_layer_count: int | None = None
    mlp_layer_count: int | None = None
    mlp_matrices: int = 3  # gate/up/down (SwiGLU) = 3
    dsa_index_n_heads: int | None = None  # the DSA indexer's heads (index_n_heads)
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
    quant: QuantScheme | None = None  # bytes per parameter, for the weights estimate (quant.py)
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

    def is_hybrid_swa(self, archs: str) -> bool:
        """Whether SGLang splits the KV pool into full and sliding-window parts, by the release's
        is_hybrid_swa_model list (`archs` names it: a window's `Rules.swa_archs`)."""
        return self.architecture in HYBRID_SWA_ARCHS.get(archs, _SWA_0523)

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
