"""Speculative decoding as SGLang resolves it: steps/topk/draft tokens, the draft's weights and KV layers.

Sources: server_args._auto_choose_speculative_params and _handle_speculative_decoding (the 48-request
default), models/qwen3_5_mtp.py (an MTP draft shares embeddings and lm_head with the target),
model_executor/model_runner_components/spec_aux_hidden_state.py (which drafts fold into the KV cell).
"""

from __future__ import annotations

from dataclasses import dataclass

from sgtui.core.model import ModelFacts, mtp_weight_bytes
from sgtui.core.sglang.flags import LaunchSpec

EAGLE_LIKE = frozenset({"EAGLE", "EAGLE3", "NEXTN", "MTP"})
_WIDE_DEFAULT_ARCHS = frozenset({"LlamaForCausalLM", "Grok1ForCausalLM", "Grok1VForCausalLM"})
DEFAULT_MAX_RUNNING = 48  # "Max running requests is reset to 48 for speculative decoding"


@dataclass(frozen=True)
class SpecDecoding:
    """The resolved speculative-decoding shape: D = draft_tokens per request per step."""

    algorithm: str
    steps: int
    topk: int
    draft_tokens: int


def speculative_params(spec: LaunchSpec, model: ModelFacts) -> SpecDecoding | None:
    """Steps/topk/draft tokens as SGLang resolves them: (3, 1, 4) by default, (5, 4, 8) for Llama and
    Grok; with topk 1 the draft tokens are forced to steps + 1."""
    algo = (spec.speculative_algorithm or "").upper()
    if not algo:
        return None
    wide = algo != "STANDALONE" and model.architecture in _WIDE_DEFAULT_ARCHS
    default = (5, 4, 8) if wide else (3, 1, 4)  # server_args.auto_choose_speculative_params
    steps = spec.speculative_num_steps or default[0]
    topk = spec.speculative_eagle_topk or default[1]
    draft = spec.speculative_num_draft_tokens or default[2]
    if topk == 1 and algo != "NGRAM":
        draft = steps + 1
    return SpecDecoding(algo, steps, topk, draft)


def estimate_draft_weight_bytes(model: ModelFacts, sd: SpecDecoding, draft: ModelFacts | None) -> int | None:
    """Total bytes of the draft: a given draft checkpoint, else the target's own MTP/NextN layers
    (None when neither is known)."""
    if sd.algorithm == "NGRAM":
        return 0
    if draft is not None:
        return draft.weight_bytes
    if sd.algorithm not in EAGLE_LIKE or not model.mtp_layers:
        return None
    # speculative/eagle_worker.py (0.5.9; eagle_worker_v2.py in 0.5.23): a non-EAGLE3 draft gets the
    # target's embedding and lm_head (set_embed_and_head deletes its own, then empty_cache), so what it
    # keeps are its decoder layer(s), eh_proj and norms
    return mtp_weight_bytes(model, with_embeddings=False)


def draft_kv_layers(model: ModelFacts, sd: SpecDecoding | None, draft: ModelFacts | None) -> int:
    """Layers of the draft's KV pool: 1 for an EAGLE/MTP draft on a hybrid linear model
    (full_attention_layer_ids=[0]), the draft checkpoint's own layers, else the NextN/MTP layers."""
    if sd is None or sd.algorithm == "NGRAM":
        return 0
    if model.is_hybrid_linear and draft is None:
        return 1
    if draft is not None:
        return draft.full_attention_layers
    return model.mtp_layers or 1
