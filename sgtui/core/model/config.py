"""A Hugging Face config.json -> `ModelFacts`: the fields SGLang reads, under every name families use."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sgtui.core.model.facts import (
    CONTEXT_LENGTH_KEYS,
    DSA_ARCHS,
    DTYPE_BYTES,
    GDN_HYBRID_ARCHS,
    GDN_HYBRID_MODEL_TYPES,
    LinearAttention,
    Mamba2,
    ModelError,
    ModelFacts,
)
from sgtui.core.model.quant import parse_quant_scheme
from sgtui.core.model.weights import estimate_weight_bytes


def _int(cfg: dict[str, Any], key: str, source: str) -> int:
    value = cfg.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        if value is None:
            raise ModelError(f"{source}: missing required field {key!r} (a Hugging Face config.json has it)")
        raise ModelError(f"{source}: field {key!r} must be an integer, got {value!r}")
    return value


class _NotAnInteger(ValueError):
    """An optional count given as a number that is not a whole one (2.5, 1e400 = inf): named with its file
    by `model_facts_from_config`, never read as absent (that would size the model wrong, silently)."""

    def __init__(self, key: str, value: float) -> None:
        super().__init__(key)
        self.key, self.value = key, value


def _opt_int(cfg: dict[str, Any], key: str) -> int | None:
    value = cfg.get(key)
    if isinstance(value, float):
        if not value.is_integer():
            raise _NotAnInteger(key, value)
        return int(value)
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


def _quant_config(cfg: dict[str, Any], text: dict[str, Any]) -> Any:
    """The quantization_config wherever the file keeps it (top level, text config, compression_config)."""
    return cfg.get("quantization_config") or text.get("quantization_config") or cfg.get("compression_config")


def _quantization(cfg: dict[str, Any], text: dict[str, Any]) -> tuple[str | None, str | None, bool]:
    """(method, kv_cache_quant_algo, whether that algo comes from a compressed-tensors kv_cache_scheme)."""
    qc = _quant_config(cfg, text)
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
    try:
        return _facts(cfg, source, weight_bytes)
    except _NotAnInteger as exc:
        raise ModelError(f"{source}: field {exc.key!r} must be a whole number, got {exc.value!r}") from None


def _facts(cfg: dict[str, Any], source: str, weight_bytes: int | None) -> ModelFacts:
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
    given_kv = _opt_int(shapes, "num_key_value_heads")
    if given_kv is not None and given_kv <= 0:
        raise ModelError(
            f"{source}: num_key_value_heads {given_kv}: must be at least 1 (left out, it is the head count)"
        )
    vocab = _opt_int(text, "vocab_size")
    if vocab is not None and vocab < 0:
        raise ModelError(f"{source}: vocab_size {vocab}: must be a positive integer")
    kv_heads = 1 if text.get("multi_query") is True else (given_kv or heads)
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
        dsa_index_n_heads=_opt_int(text, "index_n_heads")
        if arch in DSA_ARCHS and "index_topk" in text
        else None,
        num_experts=experts,
        moe_intermediate_size=_opt_int(text, "moe_intermediate_size")
        or ((_opt_int(text, "intermediate_size") or 0) if experts else 0),
        shared_expert_intermediate_size=_opt_int(text, "shared_expert_intermediate_size")
        or (_opt_int(text, "n_shared_experts") or 0) * (_opt_int(text, "moe_intermediate_size") or 0),
        dense_layers=min(layers, _opt_int(text, "first_k_dense_replace") or 0) if experts else 0,
        q_lora_rank=_opt_int(text, "q_lora_rank") if kv_lora_rank is not None else None,
        qk_nope_head_dim=_opt_int(text, "qk_nope_head_dim") if kv_lora_rank is not None else None,
        mla_v_head_dim=_opt_int(text, "v_head_dim") if kv_lora_rank is not None else None,
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
        quant=parse_quant_scheme(_quant_config(cfg, text), text),
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
    pattern_kinds = text.get("hybrid_override_pattern")
    if isinstance(pattern_kinds, str) and arch.startswith("NemotronH"):
        # one block per layer (models/nemotron_h.py ALL_DECODER_LAYER_TYPES): M mamba, * attention,
        # - MLP, E MoE; its MLP and experts are up_proj/down_proj with relu^2
        facts = _replace(
            facts,
            moe_layer_count=pattern_kinds.count("E"),
            mlp_layer_count=pattern_kinds.count("-"),
            mlp_matrices=2,
            shared_expert_intermediate_size=_opt_int(text, "moe_shared_expert_intermediate_size")
            or facts.shared_expert_intermediate_size,
        )
    if weight_bytes is not None:
        return _replace(facts, weight_bytes=weight_bytes, weights_estimated=False)
    return _replace(facts, weight_bytes=estimate_weight_bytes(facts), weights_estimated=True)


def _replace(facts: ModelFacts, **changes: Any) -> ModelFacts:
    return replace(facts, **changes)
