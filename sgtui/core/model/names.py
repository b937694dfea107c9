"""The quantization a model's name announces ("Qwen3-32B-AWQ", "DeepSeek-R1-FP8", "Llama-3-70B-Int4"),
to check it against the config's `quantization_config`.

A quantized checkpoint's config.json always carries its quantization_config (transformers and SGLang's
loader read the method from there: model_config._parse_quant_hf_config); one without it whose name says
GPTQ/AWQ/FP8/Int4 is most likely the base model's config handed in by mistake, or a checkpoint whose
config was stripped. Either way pricing it as bf16 without a word is wrong by 2x to 4x.
"""

from __future__ import annotations

import re

from sgtui.core.model.quant import FP4_E2M1_E8M0, QuantScheme

# (pattern on the name, family, the scheme priced when the config says nothing)
_NAMED: tuple[tuple[re.Pattern[str], str, QuantScheme], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), family, scheme)
    for pattern, family, scheme in (
        (r"(?<![a-z])(nv)?fp4(?![a-z0-9])|nvfp4", "fp4", QuantScheme("nvfp4", 0.5 + 1 / 16)),
        (r"mxfp4", "fp4", QuantScheme("mxfp4", FP4_E2M1_E8M0, experts_only=True)),
        (r"(?<![a-z])gptq", "int4", QuantScheme("gptq", 0.5 + 2.5 / 128)),
        (r"(?<![a-z])awq", "int4", QuantScheme("awq", 0.5 + 2.5 / 128)),
        (
            r"(?<![a-z0-9])(int4|w4a16|4bit|4-bit|bnb-4bit)(?![0-9])",
            "int4",
            QuantScheme("int4", 0.5 + 2.5 / 128),
        ),
        (r"(?<![a-z0-9])(fp8|w8a8-fp8|float8)(?![0-9])", "fp8", QuantScheme("fp8", 1.0)),
        (r"(?<![a-z0-9])(int8|w8a8|8bit)(?![0-9])", "int8", QuantScheme("w8a8_int8", 1.0)),
    )
)

_BITS = {"fp4": 4, "int4": 4, "fp8": 8, "int8": 8}


def named_quantization(name: str) -> tuple[str, QuantScheme] | None:
    """(family, scheme) a model name announces, from its last path part ("/models/Qwen3-32B-AWQ"), or None."""
    base = _last_part(name)
    for pattern, family, scheme in _NAMED:
        if pattern.search(base):
            return family, scheme
    return None


def _last_part(name: str) -> str:
    """The last path part: "Qwen3-32B-AWQ" of "/m/Qwen3-32B-AWQ/" or of "/m/Qwen3-32B-AWQ/config.json"."""
    return name.rstrip("/").removesuffix("/config.json").rsplit("/", 1)[-1]


def named_bits(family: str) -> int:
    return _BITS[family]


def config_bits(scheme: QuantScheme | None) -> int | None:
    """Bits per weight of a config's scheme (its experts when only they are quantized): 4 or 8."""
    if scheme is None:
        return None
    per = scheme.experts if scheme.experts_only else scheme.linear_bytes
    return 4 if per <= 0.75 else 8 if per <= 1.25 else None


def name_versus_config(
    name: str, quant: QuantScheme | None, method: str | None, estimated: bool
) -> str | None:
    """A warning when the name and the config disagree about quantization, else None. `estimated`:
    the checkpoint's bytes are not known (no safetensors), so the name's scheme prices the weights."""
    named = named_quantization(name)
    if named is None:
        return None
    family, scheme = named
    label = _last_part(name)
    if method is None:
        priced = (
            f"priced as {scheme.method} ({named_bits(family)}-bit weights) instead of the config dtype"
            if estimated
            else "the checkpoint's own bytes are used"
        )
        return (
            f"The name {label!r} says {family.upper()}, but its config.json has no quantization_config "
            f"(SGLang would load it unquantized, or this is the base model's config): {priced}. Check that "
            "the config is the quantized checkpoint's."
        )
    bits = config_bits(quant)
    if bits is not None and bits != named_bits(family):
        return (
            f"The name {label!r} says {family.upper()}, but quantization_config says {method} "
            f"({bits}-bit weights): priced from the config, as SGLang loads it."
        )
    return None
