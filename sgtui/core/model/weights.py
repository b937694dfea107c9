"""Parameter counts from a model's shapes, and the checkpoint's bytes when no weights are at hand."""

from __future__ import annotations

import re

from sgtui.core.model.facts import DTYPE_BYTES, ModelFacts
from sgtui.core.model.quant import QuantScheme


def attention_params(m: ModelFacts) -> int:
    """Parameters of one full-attention block (Qwen3.5/Next gate the output, doubling q_proj)."""
    h = m.hidden_size
    if m.is_mla:
        assert m.kv_lora_rank is not None and m.qk_rope_head_dim is not None
        heads, rope = m.num_attention_heads, m.qk_rope_head_dim
        nope = m.qk_nope_head_dim or m.head_dim
        v = m.mla_v_head_dim or nope
        q = heads * (nope + rope)
        q_proj = h * m.q_lora_rank + m.q_lora_rank * q if m.q_lora_rank else h * q
        return q_proj + h * (m.kv_lora_rank + rope) + m.kv_lora_rank * heads * (nope + v) + heads * v * h
    q_out = m.num_attention_heads * m.head_dim * (2 if m.is_gdn_hybrid else 1)
    return (
        h * q_out
        + h * m.num_kv_heads * (m.head_dim + m.v_head_dim)
        + m.num_attention_heads * m.v_head_dim * h
    )


def mlp_params(m: ModelFacts) -> int:
    """Parameters of one MLP (all experts of an MoE layer, plus the shared expert and the router)."""
    h, k = m.hidden_size, m.mlp_matrices
    if m.num_experts and m.moe_intermediate_size:
        return (
            m.num_experts * (k * h * m.moe_intermediate_size + h) + k * h * m.shared_expert_intermediate_size
        )
    return k * h * m.intermediate_size


def _moe_and_dense_layers(m: ModelFacts) -> tuple[int, int]:
    """(layers with experts, layers with a dense MLP)."""
    if m.moe_layer_count is not None:
        return m.moe_layer_count, m.mlp_layer_count or 0
    if m.num_experts and m.moe_intermediate_size:
        return m.num_layers - m.dense_layers, m.dense_layers
    return 0, m.num_layers


def indexer_params(m: ModelFacts) -> int:
    """One DeepSeek-sparse-attention indexer (layers/attention/nsa/nsa_indexer.py Indexer: wq_b
    q_lora -> heads x head_dim, wk hidden -> head_dim, weights_proj hidden -> heads, all
    ReplicatedLinear), 0 without one."""
    if not m.dsa_index_head_dim or not m.dsa_index_n_heads:
        return 0
    d, n, h = m.dsa_index_head_dim, m.dsa_index_n_heads, m.hidden_size
    return (m.q_lora_rank or h) * n * d + h * d + h * n


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
    """A parameter count from the shapes: embeddings, attention (and a DSA indexer), MLP/MoE, linear
    attention, the two RMSNorms per layer and the final one, vision tower (Llama-3.1-8B:
    8,030,261,248, its exact count)."""
    return sum(_parts(m).values())


def mtp_weight_bytes(m: ModelFacts, *, with_embeddings: bool = True) -> int:
    """Bytes of the checkpoint's own MTP/NextN layers (0 without them).

    A Qwen3.5/Next MTP module shares embed_tokens and lm_head with the target (models/qwen3_5_mtp.py),
    leaving its decoder layers plus the 2h->h fc; a DeepSeek-style NextN layer carries its own
    embedding and head in the checkpoint (`with_embeddings=False` leaves them out: once loaded, the
    EAGLE worker swaps them for the target's with set_embed_and_head, which frees them)."""
    if not m.mtp_layers:
        return 0
    h = m.hidden_size
    params = m.mtp_layers * (attention_params(m) + mlp_params(m)) + 2 * h * h
    if not m.is_gdn_hybrid and with_embeddings:
        params += 2 * m.vocab_size * h
    per_param = 2.0 if m.weights_estimated else m.weight_bytes / max(1, estimate_param_count(m))
    return int(params * per_param)


# The parts of a model a quantization scheme can leave out, and the module names that mean them.
_PART_NAMES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("lm_head", ("lm_head",)),
    ("embed", ("embed",)),
    ("linear", ("linear_attn", "mixer", "mamba")),
    ("shared", ("shared_expert",)),
    ("experts", ("experts",)),
    ("router", ("router", "mlp.gate")),
    ("attention", ("self_attn", "attention", ".attn", "q_proj", "k_proj", "v_proj", "o_proj", "qkv")),
    ("mlp", ("mlp", "gate_proj", "up_proj", "down_proj", "ffn")),
    ("vision", ("visual", "vision")),
)
_LAYER = re.compile(r"layers\\?\.(\d+)\\?\.")
_EVERY_BLOCK = ("attention", "linear", "mlp", "experts", "shared", "router")


def _parts_named(name: str) -> list[str]:
    """The parts one module name or pattern covers ("re:.*mlp.gate$" is the router, not the MLP)."""
    found = [part for part, keys in _PART_NAMES if any(k in name for k in keys)]
    if "router" in found and ("gate_proj" in name or "gate_up" in name):
        found.remove("router")  # mlp.gate_proj is the MLP's own projection
    for broad, narrow in (("attention", "linear"), ("experts", "shared"), ("mlp", "router")):
        if broad in found and narrow in found:
            found.remove(broad)
    if "mlp" in found and ("experts" in found or "shared" in found):
        found.remove("mlp")
    return found


def _ignored_parts(names: tuple[str, ...], layers: int) -> dict[str, float]:
    """The share of each part a scheme keeps unquantized: 1 for a pattern over every layer
    ("re:.*self_attn.*", "model.layers.*.mlp.router"), k / layers for names of k single layers
    ("model.layers.0.self_attn.q_proj", "layers.0.")."""
    whole: set[str] = set()
    per_layer: dict[str, set[int]] = {}
    for raw in names:
        name = raw.lower().removeprefix("re:")
        found = _parts_named(name)
        layer = _LAYER.search(name)
        if not found and layer is None:
            continue
        for part in found or _EVERY_BLOCK:
            if layer is not None:
                per_layer.setdefault(part, set()).add(int(layer.group(1)))
            else:
                whole.add(part)
    shares = {part: 1.0 for part in whole}
    for part, indices in per_layer.items():
        shares.setdefault(part, min(1.0, len(indices) / max(1, layers)))
    return shares


def _parts(m: ModelFacts) -> dict[str, int]:
    """Parameters per part of the model."""
    h, k = m.hidden_size, m.mlp_matrices
    parts = {
        "embed": m.vocab_size * h,
        "lm_head": 0 if m.tie_word_embeddings else m.vocab_size * h,
        "attention": m.full_attention_layers * attention_params(m),
        "indexer": m.full_attention_layers * indexer_params(m),
        "linear": m.linear_attention_layers * linear_attention_params(m),
        "norms": m.num_layers * 2 * h + h,
        "vision": 12 * m.vision_layers * m.vision_hidden_size**2 if m.has_vision else 0,
    }
    moe_layers, dense_layers = _moe_and_dense_layers(m)
    if m.num_experts and m.moe_intermediate_size:
        parts["experts"] = moe_layers * m.num_experts * k * h * m.moe_intermediate_size
        parts["router"] = moe_layers * m.num_experts * h
        parts["shared"] = moe_layers * k * h * m.shared_expert_intermediate_size
    parts["mlp"] = dense_layers * k * h * m.intermediate_size
    return parts


def part_bytes(m: ModelFacts, scheme: QuantScheme | None = None) -> dict[str, float]:
    """Bytes of each part of the checkpoint (the keys of `_parts`): each at the scheme's bytes per
    parameter, the parts it leaves out (embeddings, lm_head, norms, the vision tower, ignored modules)
    in the model dtype; without a scheme every part in the model dtype."""
    plain = DTYPE_BYTES.get(m.dtype, 2)
    if scheme is None:
        return {part: float(params * plain) for part, params in _parts(m).items()}
    ignored = _ignored_parts(scheme.ignored, m.num_layers)
    out: dict[str, float] = {}
    for part, params in _parts(m).items():
        if part in ("norms", "vision", "embed") or (part == "lm_head" and not scheme.lm_head_quantized):
            quant = float(plain)
        elif part == "router":
            quant = float(plain)  # a router is a tiny replicated linear every scheme keeps
        elif part == "experts":
            quant = scheme.experts
        elif scheme.experts_only:
            quant = float(plain)
        else:
            quant = scheme.linear_bytes
        share = ignored.get(part, 0.0)
        out[part] = params * (share * plain + (1 - share) * quant)
    return out


def quantized_weight_bytes(m: ModelFacts, scheme: QuantScheme) -> int:
    """Bytes of a quantized checkpoint: the sum of `part_bytes` under the scheme."""
    return int(sum(part_bytes(m, scheme).values()))


def estimate_weight_bytes(m: ModelFacts) -> int:
    """The checkpoint's bytes from its shapes: quantized parts at their scheme's bytes per parameter
    (quant.py), the rest at the config dtype's size; an unknown method at 1 byte (8-bit names) or
    half a byte (4-bit names) per parameter."""
    if m.quant is not None:
        return quantized_weight_bytes(m, m.quant)
    params = estimate_param_count(m)
    method = m.quant_method or ""
    if any(key in method for key in ("4", "awq", "gptq", "bitsandbytes")):
        return params // 2
    if method:
        return params
    return params * DTYPE_BYTES.get(m.dtype, 2)
