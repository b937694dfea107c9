"""The weights one GPU holds, as SGLang shards a checkpoint: not simply the checkpoint over tp x pp.

What every rank keeps whole, or shards some other way (SGLang 0.5.9 source unless noted; the rules
that moved between releases are the window's):
- `ReplicatedLinear` layers (layers/linear.py): a DSA indexer's wq_b/wk/weights_proj
  (layers/attention/nsa/nsa_indexer.py); MLA's `fused_qkv_a_proj_with_mqa` (q_a_proj +
  kv_a_proj_with_mqa, DeepSeek V2/V3/R1, Kimi) or `kv_a_proj_with_mqa` without a q LoRA
  (models/deepseek_v2.py DeepseekV2AttentionMLA.__init__); the MoE router (DeepSeek's `MoEGate.weight`,
  an nn.Parameter of (n_routed_experts, hidden) in the default dtype; Qwen2/3-MoE's and Mixtral's
  `self.gate = ReplicatedLinear(...)`); the RMSNorms.
- K/V heads (QKVParallelLinear): with tp >= kv heads each rank keeps one whole head
  (num_kv_head_replicas = tp / kv heads), so K/V weights stop shrinking there.
- the vocab-parallel embedding and lm_head (layers/vocab_parallel_embedding.py): rows padded to a
  multiple of 64 (64 x tp when that does not divide), then split over the TP group; a tied lm_head
  is the embedding itself at pp 1. Under DP attention the embedding is whole on every rank up to
  0.5.7 and split over the attention-TP group from 0.5.8 (`Rules.dp_attention_embedding`); the
  lm_head splits over the attention-TP group with --enable-dp-lm-head.
- DP attention: the attention block splits over attn_tp = tp / dp, not tp.
- DeepSeek's shared expert under a DeepEP-style all-to-all (--moe-a2a-backend deepep, ...): whole.
- MoE experts: under TP each rank holds 1/tp of every expert; under expert parallelism (--ep-size)
  n_experts/ep whole experts cut by tp/ep, the same bytes, plus --ep-num-redundant-experts copies.
- MLA's absorbed copies: post_load_weights (models/deepseek_common/deepseek_weight_loader.py from
  0.5.x) splits this rank's kv_b_proj into `w_kc`/`w_vc` with `.contiguous()`, a copy kept beside
  kv_b_proj: in the model dtype, or for an FP8 checkpoint 1 byte, except a 128x128-block FP8 one on
  CUDA, dequantized to bf16 first from 0.4.6.post3 (`Rules.mla_copy_block_fp8`).
- pipeline parallelism: each stage holds its layers; the first the embedding, the last the lm_head.
- a draft from the checkpoint's own MTP layers: `shard_own_draft`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sgtui.core.model import DTYPE_BYTES, ModelFacts, attention_params, mlp_params, part_bytes
from sgtui.core.model.quant import QuantScheme
from sgtui.core.model.weights import indexer_params
from sgtui.core.sglang.flags import LaunchSpec
from sgtui.core.sglang.rules import Rules

VOCAB_PADDING = 64  # DEFAULT_VOCAB_PADDING_SIZE
_FP8_METHODS = frozenset({"fp8", "fbgemm_fp8", "w8a8_fp8", "ptpc_fp8"})


@dataclass(frozen=True)
class Sharded:
    """One GPU's weights: `per_gpu_bytes` in all, of which `whole_bytes` are held whole on every rank
    (or beyond an even split), and `copy_bytes` are made after loading (MLA's w_kc/w_vc)."""

    per_gpu_bytes: int
    even_split_bytes: int  # what checkpoint / (tp x pp) would have said
    whole_bytes: int
    copy_bytes: int


def _padded_rows(vocab: int, ways: int) -> int:
    """Rows one rank holds of a vocab-parallel table split `ways` ways (VocabParallelEmbedding)."""
    pad = VOCAB_PADDING
    if math.ceil(vocab / pad) * pad % ways:
        pad *= ways
    return math.ceil(vocab / pad) * pad // ways


def _int_flag(spec: LaunchSpec, name: str, default: int) -> int:
    value = spec.values.get(name)
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else default


# --moe-a2a-backend values (and 0.4.x's --enable-deepep-moe) under which DeepseekV2MoE builds its shared
# expert with tp_size=1 (0.4.8.post1 "dict(tp_rank=0, tp_size=1) if enable_deepep_moe", 0.5.2/0.5.9
# is_deepep() / is_mooncake() / is_mori() / is_flashinfer(), 0.5.23 parallel_group="replicated"): whole on
# every rank. Shared-expert fusion is off then (deepseek_v2.determine_num_fused_shared_experts).
_A2A_WHOLE_SHARED = frozenset(
    {"deepep", "mooncake", "mori", "flashinfer", "ascend_fuseep", "megamoe", "deepep_v2"}
)
_DEEPSEEK_MOE = ("Deepseek", "Kimi")


def _shared_expert_whole(spec: LaunchSpec, m: ModelFacts) -> bool:
    if not m.architecture.startswith(_DEEPSEEK_MOE) or not m.shared_expert_intermediate_size:
        return False
    backend = str(spec.values.get("--moe-a2a-backend") or "").lower()
    return backend in _A2A_WHOLE_SHARED or bool(spec.values.get("--enable-deepep-moe"))


def _attention_share(m: ModelFacts, attn_tp: int) -> tuple[float, float]:
    """(share of the attention parameters one rank holds, share of them held whole on every rank)."""
    total = attention_params(m)
    if total <= 0:
        return 1 / attn_tp, 0.0
    h = m.hidden_size
    if m.is_mla:
        assert m.kv_lora_rank is not None and m.qk_rope_head_dim is not None
        latent = m.kv_lora_rank + m.qk_rope_head_dim
        whole = h * (m.q_lora_rank + latent) if m.q_lora_rank else h * latent
        return whole / total + (total - whole) / total / attn_tp, whole / total
    kv = h * m.num_kv_heads * (m.head_dim + m.v_head_dim)
    kv_share = max(1, m.num_kv_heads // attn_tp) / m.num_kv_heads if m.num_kv_heads else 1 / attn_tp
    return kv / total * kv_share + (total - kv) / total / attn_tp, 0.0


def _mla_copy_bytes(m: ModelFacts, attn_tp: int, layers: int, rules: Rules, rocm: bool, dtype: str) -> float:
    """w_kc + w_vc of one rank: its kv_b_proj slice (kv_lora_rank x heads/attn_tp x (nope + v)), copied."""
    if not m.is_mla or m.kv_lora_rank is None:
        return 0.0
    nope = m.qk_nope_head_dim or m.head_dim
    v = m.mla_v_head_dim or nope
    params = m.kv_lora_rank * (m.num_attention_heads // attn_tp) * (nope + v)
    each = DTYPE_BYTES.get(dtype, 2)
    scheme = m.quant
    if scheme is not None and scheme.method in _FP8_METHODS:
        bf16 = scheme.block == (128, 128) and not rocm and rules.mla_copy_block_fp8 == "bf16"
        each = 2 if bf16 else 1
    return float(params * each * layers)


def shard_weights(
    spec: LaunchSpec,
    m: ModelFacts,
    total_bytes: int,
    rules: Rules,
    *,
    rocm: bool,
    dtype: str,
    scheme: QuantScheme | None = None,
) -> Sharded:
    """The bytes one GPU (the fullest pipeline stage) holds of a checkpoint of `total_bytes` (the
    target as loaded: MTP layers out, runtime dtype). Each part's share of `total_bytes` comes from
    the config's shapes and the quantization scheme the weights are held in (`scheme`, else the
    checkpoint's); the parts then split as SGLang splits them."""
    tp, pp = spec.tp_size, spec.pp_size
    dp_attn = spec.attn_dp_size or (spec.dp_size if spec.enable_dp_attention else 1)
    attn_tp = max(1, tp // dp_attn)
    parts = part_bytes(m, scheme or m.quant)
    estimated = sum(parts.values())
    even = total_bytes // (tp * pp)
    if estimated <= 0 or total_bytes <= 0:
        return Sharded(even, even, 0, 0)
    scale = total_bytes / estimated
    stage = math.ceil(m.num_layers / pp) / m.num_layers if pp > 1 else 1.0
    attn_share, attn_whole = _attention_share(m, attn_tp)
    experts = max(1, m.num_experts)
    redundant = _int_flag(spec, "--ep-num-redundant-experts", 0)
    dense_tp = _int_flag(spec, "--moe-dense-tp-size", tp)
    share = {
        "attention": attn_share,
        "linear": 1 / tp,
        "mlp": 1 / max(1, min(tp, dense_tp)) if m.num_experts else 1 / tp,
        "experts": (experts + redundant) / experts / tp,
        "shared": 1.0 if _shared_expert_whole(spec, m) else 1 / tp,
        "router": 1.0,
        "indexer": 1.0,
        "norms": 1.0,
        "vision": 1 / tp,
    }
    layer_bytes = sum(parts.get(k, 0.0) * v * scale * stage for k, v in share.items())
    whole = (parts.get("router", 0.0) + parts.get("indexer", 0.0) + parts.get("norms", 0.0)) * scale * stage
    if share["shared"] == 1.0:
        whole += parts.get("shared", 0.0) * scale * stage
    whole += parts.get("attention", 0.0) * attn_whole * scale * stage
    # the embedding and lm_head, each split over its own group (or kept whole)
    vocab = max(1, m.vocab_size)
    embed_ways = tp
    if dp_attn > 1:
        embed_ways = attn_tp if rules.dp_attention_embedding == "attn-tp" else 1
    head_ways = attn_tp if spec.values.get("--enable-dp-lm-head") else tp
    embed = parts.get("embed", 0.0) * scale * _padded_rows(vocab, embed_ways) / vocab
    head_part = parts.get("lm_head", 0.0) or (parts.get("embed", 0.0) if pp > 1 else 0.0)
    head = head_part * scale * _padded_rows(vocab, head_ways) / vocab
    if embed_ways == 1:
        whole += embed
    vocab_bytes = max(embed, head) if pp > 1 else embed + head
    layers = math.ceil(m.full_attention_layers / pp)
    copies = _mla_copy_bytes(m, attn_tp, layers, rules, rocm, dtype)
    per_gpu = layer_bytes + vocab_bytes + copies
    return Sharded(int(per_gpu), even, int(whole), int(copies))


def shard_own_draft(
    spec: LaunchSpec, m: ModelFacts, draft_bytes: int, rules: Rules, *, rocm: bool, dtype: str
) -> int:
    """Bytes per GPU of a draft built from the checkpoint's own MTP/NextN layers (`draft_bytes` in all,
    its embedding and lm_head excluded: the target's are shared). Its decoder layer splits like the
    target's (attention over attn_tp, experts over tp, router and DSA indexer whole); the 2h -> h
    `eh_proj` / `fc` is an nn.Linear (deepseek_nextn.py, qwen3_5_mtp.py 0.5.9; a ReplicatedLinear in
    0.5.23's deepseek_nextn.py), whole on every rank, as are the norms; MLA adds its w_kc/w_vc copies."""
    layers = m.mtp_layers
    if not layers or draft_bytes <= 0:
        return draft_bytes // max(1, spec.tp_size)
    tp = spec.tp_size
    dp_attn = spec.attn_dp_size or (spec.dp_size if spec.enable_dp_attention else 1)
    attn_tp = max(1, tp // dp_attn)
    h = m.hidden_size
    attn_share, _ = _attention_share(m, attn_tp)
    attention = layers * attention_params(m)
    mlp = layers * mlp_params(m)
    router = layers * m.num_experts * h
    indexer = layers * indexer_params(m)
    whole = 2 * h * h + layers * 4 * h  # eh_proj / fc, norms
    total = attention + mlp + indexer + whole
    held = attention * attn_share + (mlp - router) / tp + router + indexer + whole
    copies = _mla_copy_bytes(m, attn_tp, layers, rules, rocm, dtype)
    return int(draft_bytes * held / total + copies)
