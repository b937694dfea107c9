"""Model facts read from a Hugging Face config.json (and the checkpoint's weight bytes).

facts.py: `ModelFacts` and SGLang's architecture lists; config.py: config.json -> facts;
quant.py: the checkpoint's quantization scheme; weights.py: parameter counts and the weights
estimate; checkpoint.py: the real bytes (index or safetensors headers) and `load_model_facts`.
"""

from sgtui.core.model.checkpoint import checkpoint_weight_bytes, load_model_facts, safetensors_header_bytes
from sgtui.core.model.config import context_length_of, model_facts_from_config
from sgtui.core.model.facts import (
    CONTEXT_LENGTH_KEYS,
    DSA_ARCHS,
    DTYPE_BYTES,
    GDN_HYBRID_ARCHS,
    HYBRID_SWA_ARCHS,
    MULTIMODAL_ARCHS,
    MULTIMODAL_OFF_BY_DEFAULT,
    PIECEWISE_DISABLED_ARCHS,
    LinearAttention,
    Mamba2,
    ModelError,
    ModelFacts,
)
from sgtui.core.model.quant import QuantScheme, parse_quant_scheme
from sgtui.core.model.weights import (
    attention_params,
    estimate_param_count,
    estimate_weight_bytes,
    linear_attention_params,
    mlp_params,
    mtp_weight_bytes,
    part_bytes,
)

__all__ = [
    "CONTEXT_LENGTH_KEYS",
    "DSA_ARCHS",
    "DTYPE_BYTES",
    "GDN_HYBRID_ARCHS",
    "HYBRID_SWA_ARCHS",
    "MULTIMODAL_ARCHS",
    "MULTIMODAL_OFF_BY_DEFAULT",
    "PIECEWISE_DISABLED_ARCHS",
    "LinearAttention",
    "Mamba2",
    "ModelError",
    "ModelFacts",
    "QuantScheme",
    "attention_params",
    "checkpoint_weight_bytes",
    "context_length_of",
    "estimate_param_count",
    "estimate_weight_bytes",
    "linear_attention_params",
    "load_model_facts",
    "mlp_params",
    "model_facts_from_config",
    "mtp_weight_bytes",
    "parse_quant_scheme",
    "part_bytes",
    "safetensors_header_bytes",
]
