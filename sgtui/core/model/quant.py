"""A checkpoint's quantization scheme, from its `quantization_config`: bytes per parameter, scales included.

What each format stores per weight (the tensors its SGLang / transformers loader expects):
- fp8 (DeepSeek/Qwen "fp8", fbgemm_fp8, w8a8_fp8): 1 byte, plus one fp32 scale per `weight_block_size`
  block (a 1-byte ue8m0 scale with `scale_fmt: ue8m0`); per-channel scales are negligible.
- awq / gptq (and their marlin forms): `bits`/8, plus per `group_size` group an fp16 scale and a packed
  `bits`-bit zero point (qzeros); `group_size: -1` is per channel.
- compressed-tensors: each `config_groups` entry's `weights` (num_bits, type, strategy, group_size);
  int groups keep a 2-byte scale per group (+ a zero point if asymmetric), 4-bit float groups (NVFP4)
  a 1-byte fp8 scale per 16; `ignore` lists what stays unquantized.
- mxfp4 (gpt-oss): only the MoE experts, 4 bits plus a 1-byte e8m0 scale per 32; `modules_to_not_convert`.
- modelopt: FP8 1 byte; NVFP4 4 bits plus an fp8 scale per `group_size` (16); MIXED_PRECISION per layer;
  `exclude_modules` / `ignore`.
- a per-expert dtype (`expert_dtype: "fp4"`, DeepSeek-V4): experts in FP4 (e2m1 + e8m0 per 32), the
  rest in the scheme's own format.
- bitsandbytes: 4-bit (nf4/fp4) half a byte plus an absmax per 64 (fp32, or 8-bit with double
  quantisation); 8-bit one byte; `llm_int8_skip_modules`.
Whatever a scheme leaves out (embeddings, lm_head, norms, ignored modules) is stored in the model dtype.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

FP4_E2M1_E8M0 = 0.5 + 1 / 32  # an e2m1 nibble plus one e8m0 scale per 32 values


@dataclass(frozen=True)
class QuantScheme:
    """Bytes per parameter of a quantized linear layer (and of an MoE expert when it differs)."""

    method: str
    linear_bytes: float
    expert_bytes: float | None = None  # None: experts as linear_bytes
    experts_only: bool = False  # only the MoE experts are quantized (mxfp4)
    ignored: tuple[str, ...] = ()  # module names / patterns kept in the model dtype
    lm_head_quantized: bool = False
    block: tuple[int, int] | None = None  # fp8 weight_block_size ([128, 128] for DeepSeek-V3/R1)

    @property
    def experts(self) -> float:
        return self.expert_bytes if self.expert_bytes is not None else self.linear_bytes


def _num(value: Any, default: float) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else default


def _names(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Iterable) and not isinstance(value, Mapping):
        return tuple(str(v) for v in value)
    return ()


def _fp8(qc: Mapping[str, Any]) -> float:
    block = qc.get("weight_block_size")
    if isinstance(block, list) and len(block) == 2 and all(isinstance(b, int) and b > 0 for b in block):
        scale = 1 if str(qc.get("scale_fmt") or "").lower() == "ue8m0" else 4
        return 1 + scale / (block[0] * block[1])
    return 1.0


def _int_grouped(bits: float, group: float, *, zero_point: bool = True, scale_bytes: float = 2) -> float:
    """bits/8 per weight, plus per group a scale and (optionally) a packed zero point."""
    if group <= 0:
        return bits / 8  # per channel: one scale per output row, negligible
    return bits / 8 + (scale_bytes + (bits / 8 if zero_point else 0)) / group


def _ct_weights(weights: Mapping[str, Any], fmt: str) -> float:
    """compressed-tensors QuantizationArgs -> bytes per weight."""
    bits = _num(weights.get("num_bits"), 8)
    kind = str(weights.get("type") or "int").lower()
    strategy = str(weights.get("strategy") or "").lower()
    group = _num(weights.get("group_size"), 0) if strategy in ("group", "tensor_group", "") else 0
    if kind == "float" and bits == 4:
        return 0.5 + 1 / (group or 16)  # NVFP4: an fp8 scale per 16
    if kind == "float":
        return bits / 8
    symmetric = weights.get("symmetric", True) is not False
    return _int_grouped(bits, group, zero_point=not symmetric and "pack" in fmt)


def _compressed_tensors(qc: Mapping[str, Any]) -> tuple[float, float | None]:
    """(linear bytes, expert bytes or None) from the config groups: a group whose targets name the
    experts prices them; the one targeting Linear (or the first) prices the rest."""
    groups = qc.get("config_groups")
    fmt = str(qc.get("format") or "").lower()
    linear: float | None = None
    experts: float | None = None
    if isinstance(groups, Mapping):
        for group in groups.values():
            if not isinstance(group, Mapping) or not isinstance(group.get("weights"), Mapping):
                continue
            value = _ct_weights(group["weights"], str(group.get("format") or fmt).lower())
            targets = " ".join(_names(group.get("targets"))).lower()
            if "expert" in targets and "shared" not in targets:
                experts = value
            elif linear is None or "linear" in targets:
                linear = value
    if linear is None:
        linear = experts if experts is not None else 1.0
    return linear, experts if experts != linear else None


def _modelopt(qc: Mapping[str, Any]) -> tuple[float, float | None]:
    algo = str(qc.get("quant_algo") or "").upper()
    group = _num(qc.get("group_size"), 16)
    nvfp4 = 0.5 + 1 / group
    if algo == "NVFP4" or ("FP4" in algo and "FP8" not in algo):
        return nvfp4, None
    if algo == "MIXED_PRECISION":
        layers = qc.get("quantized_layers")
        values = layers.values() if isinstance(layers, Mapping) else ()
        algos = {str(v.get("quant_algo")).upper() for v in values if isinstance(v, Mapping)}
        return (1.0, nvfp4) if "NVFP4" in algos else (1.0, None)
    return 1.0, None


def parse_quant_scheme(qc: Any, text: Mapping[str, Any] | None = None) -> QuantScheme | None:
    """The scheme a `quantization_config` (or a modelopt hf_quant_config "quantization" block) declares;
    `text` is the text config, where DeepSeek-V4 puts `expert_dtype`. None when nothing is quantized
    or the method is not one priced here."""
    if not isinstance(qc, Mapping):
        return None
    method = str(qc.get("quant_method") or qc.get("quant_algo") or "").lower()
    expert_dtype = str(qc.get("expert_dtype") or (text or {}).get("expert_dtype") or "").lower()
    ignored = (
        _names(qc.get("modules_to_not_convert"))
        + _names(qc.get("ignore"))
        + _names(qc.get("exclude_modules"))
        + _names(qc.get("ignored_layers"))
    )
    expert: float | None = None
    experts_only = False
    lm_head = bool(qc.get("lm_head"))
    if method in ("fp8", "fbgemm_fp8", "w8a8_fp8", "ptpc_fp8"):
        linear = _fp8(qc)
    elif method in ("awq", "awq_marlin", "gptq", "gptq_marlin", "auto-round", "autoround", "moe_wna16"):
        bits = _num(qc.get("bits", qc.get("w_bit")), 4)
        group = _num(qc.get("group_size", qc.get("q_group_size")), 128)
        zero = qc.get("zero_point", True) is not False or method.startswith("gptq")
        linear = _int_grouped(bits, group, zero_point=zero)
    elif method == "compressed-tensors":
        linear, expert = _compressed_tensors(qc)
    elif method == "mxfp4":
        linear, experts_only = FP4_E2M1_E8M0, True
    elif method in ("modelopt", "modelopt_fp8", "modelopt_fp4", "nvfp4", "fp8_e4m3") or qc.get("quant_algo"):
        linear, expert = _modelopt(qc)
        method = method or "modelopt"
    elif method == "bitsandbytes":
        if qc.get("load_in_8bit"):
            linear = 1.0
        else:
            absmax = 1 / 64 + 4 / (64 * 256) if qc.get("bnb_4bit_use_double_quant") else 4 / 64
            linear = 0.5 + absmax
        ignored += _names(qc.get("llm_int8_skip_modules"))
    elif method in ("w8a8_int8", "int8"):
        linear = 1.0
    else:
        return None
    if expert_dtype in ("fp4", "mxfp4"):
        expert = FP4_E2M1_E8M0
    raw_block = qc.get("weight_block_size")
    block = (
        (int(raw_block[0]), int(raw_block[1]))
        if isinstance(raw_block, list) and len(raw_block) == 2 and all(isinstance(b, int) for b in raw_block)
        else None
    )
    return QuantScheme(
        method=method,
        linear_bytes=linear,
        expert_bytes=expert,
        experts_only=experts_only,
        ignored=ignored,
        lm_head_quantized=lm_head,
        block=block,
    )
