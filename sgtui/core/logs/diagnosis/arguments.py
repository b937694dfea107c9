"""Argument diagnoses: unknown architectures, rejected flags (with the nearest real flag), flag conflicts."""

from __future__ import annotations

import difflib
import re

from sgtui.core.logs.diagnosis.common import (
    Context,
    Diagnosis,
    Suggestion,
    phase_words,
)
from sgtui.core.logs.diagnosis.install import device_ordinal

_FALLBACK_FLAGS = (
    "--mem-fraction-static",
    "--max-running-requests",
    "--context-length",
    "--tp-size",
    "--dp-size",
    "--speculative-algorithm",
    "--speculative-num-steps",
    "--speculative-eagle-topk",
    "--speculative-num-draft-tokens",
    "--speculative-draft-model-path",
    "--disable-radix-cache",
    "--cuda-graph-max-bs",
    "--chunked-prefill-size",
    "--kv-cache-dtype",
    "--model-path",
    "--port",
    "--host",
    "--quantization",
    "--mamba-scheduler-strategy",
    "--reasoning-parser",
    "--tool-call-parser",
    "--trust-remote-code",
)


def unsupported_model(ctx: Context) -> Diagnosis:
    arch = ctx.error.values.get("architectures") or ctx.error.values.get("model_type") or "this architecture"
    if "Transformers does not recognize" in ctx.error.text:
        return _transformers_too_old(ctx, arch)
    detail = (
        f"This SGLang does not know the model's architecture ({arch}); it failed while "
        f"{phase_words(ctx.phase)}. Newer SGLang releases add architectures regularly."
    )
    suggestions = [
        Suggestion(
            None, None, "Upgrade SGLang in the server's environment (`pip install -U sglang`) and relaunch."
        ),
        Suggestion(
            "--model-impl",
            "transformers",
            "Run the model through the Transformers fallback: works for many models, slower than a "
            "native one.",
        ),
    ]
    return Diagnosis("Model architecture not supported", detail, suggestions, "unsupported_model")


def _transformers_too_old(ctx: Context, model_type: str) -> Diagnosis:
    """HF's AutoConfig (configuration_auto.py) raised "The checkpoint you are trying to load has model type
    `X` but Transformers does not recognize this architecture": the installed transformers predates the
    model, whatever SGLang knows; SGLang reads every config through it."""
    detail = (
        f"The installed transformers package does not know the model type {model_type}, so SGLang cannot "
        f"read the model's config; it failed while {phase_words(ctx.phase)}. SGLang reads every config "
        "through transformers: its version, not SGLang's, is what is too old here."
    )
    suggestions = [
        Suggestion(
            None,
            None,
            f"Install a transformers release that knows {model_type} in the server's environment: the "
            "version this SGLang pins if another one is installed, else the newer one the model card asks "
            "for (`pip install -U transformers`).",
        ),
        Suggestion(
            None,
            None,
            "Or upgrade SGLang (`pip install -U sglang`): newer releases pin a newer transformers and may "
            "add native support for the model.",
        ),
    ]
    return Diagnosis("Model architecture not supported", detail, suggestions, "unsupported_model")


def _known_flags() -> list[str]:
    try:
        from sgtui.core.sglang.flags import FLAGS

        names = list(FLAGS)
        return names or list(_FALLBACK_FLAGS)
    except (ImportError, AttributeError):
        return list(_FALLBACK_FLAGS)


_GENERIC_WORDS = frozenset({"enable", "disable", "use", "max", "min", "num", "size", "mode", "path", "type"})


def nearest_flags(option: str, n: int = 3) -> list[str]:
    """Known flags closest to `option`: its dashed spelling first (`--reasoning_parser`), then flags that
    share its most telling word (`--enable-reasoning` -> `--reasoning-parser`), then plain similarity."""
    name = option.split("=", 1)[0]
    known = _known_flags()
    dashed = "--" + name.lstrip("-").replace("_", "-")
    if dashed != name and dashed in known:
        return [dashed]
    words = [w for w in dashed[2:].split("-") if w and w not in _GENERIC_WORDS]
    telling = max(words, key=len, default=None)
    if telling is not None and len(telling) >= 5:
        sharing = [flag for flag in known if telling in flag[2:].split("-")]
        if sharing:
            return difflib.get_close_matches(dashed, sharing, n=n, cutoff=0) or sharing[:n]
    return difflib.get_close_matches(dashed, known, n=n, cutoff=0.6)


def bad_arguments(ctx: Context) -> Diagnosis:
    if "invalid device ordinal" in ctx.error.text:  # more ranks per node than GPUs: classed either way
        return device_ordinal(ctx)
    values = ctx.error.values
    text = str(values.get("argparse") or ctx.error.text).strip()
    suggestions: list[Suggestion] = []
    if values.get("flag") == "--context-length" and values.get("derived"):
        detail = (
            f"--context-length {values.get('requested')} is longer than the model's own limit "
            f"({values['derived']} tokens)."
        )
        suggestions.append(
            Suggestion(
                "--context-length", str(values["derived"]), "The longest context the model was trained for."
            )
        )
        suggestions.append(
            Suggestion(
                "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN",
                "1",
                "An environment variable that allows the longer context anyway; quality past the trained "
                "length is not guaranteed.",
            )
        )
        return Diagnosis("Context length longer than the model allows", detail, suggestions, "bad_arguments")
    if values.get("flag") == "--tp-size" and values.get("count"):
        count, tp = int(values["count"]), int(values.get("tp_size") or 0)
        fits = [n for n in (8, 4, 2, 1) if count % n == 0 and n != tp]
        detail = f"The model has {count} {values.get('what', 'heads')}, which {tp} GPUs cannot split evenly."
        if fits:
            suggestions.append(
                Suggestion(
                    "--tp-size", str(fits[0]), f"{fits[0]} divides {count}; each GPU holds an equal share."
                )
            )
        return Diagnosis("Tensor parallel size does not fit the model", detail, suggestions, "bad_arguments")
    detail = f"SGLang rejected its command line: {text[:300]}"
    if text.startswith("ambiguous option"):
        m = re.match(r"ambiguous option: (\S+) could match (.*)", text)
        if m:
            options = [o.strip() for o in m.group(2).split(",")]
            best = difflib.get_close_matches(m.group(1), options, n=1, cutoff=0) or options[:1]
            suggestions.append(
                Suggestion(
                    best[0],
                    None,
                    f"{m.group(1)} is an abbreviation that matches several flags; spell it out.",
                )
            )
    elif text.startswith("unrecognized arguments"):
        for option in re.findall(r"--[\w-]+", text):
            near = nearest_flags(option)
            if near and near[0] == "--" + option.lstrip("-").replace("_", "-"):
                suggestions.append(
                    Suggestion(near[0], None, f"SGLang's flags are spelled with dashes: {near[0]}.")
                )
            elif near:
                suggestions.append(
                    Suggestion(
                        near[0], None, f"{option} is not a flag of this SGLang; the nearest is {near[0]}."
                    )
                )
            else:
                suggestions.append(
                    Suggestion(option, None, f"Remove {option}: this SGLang has no such flag.")
                )
    elif text.startswith("argument"):
        m = re.match(r"argument (\S+?): invalid choice: '([^']*)' \(choose from (.*)\)", text)
        if m:
            flag = m.group(1).split("/")[0]
            choices = m.group(3)
            suggestions.append(
                Suggestion(flag, None, f"'{m.group(2)}' is not accepted; choose one of {choices}.")
            )
        else:
            flag = text.split()[1].rstrip(":").split("/")[0] if len(text.split()) > 1 else None
            suggestions.append(Suggestion(flag, None, "Fix this flag's value: " + text[:200]))
    elif "required" in text:
        for option in re.findall(r"--[\w-]+", text):
            suggestions.append(Suggestion(option, None, f"{option} is required."))
    return Diagnosis("Bad command-line arguments", detail, suggestions, "bad_arguments")


def incompatible_flags(ctx: Context) -> Diagnosis:
    values = ctx.error.values
    text = ctx.error.text.strip()
    if values.get("conflict") == "radix_cache":
        arch = values.get("arch") or "this model"
        detail = (
            f"SGLang refuses speculative decoding for {arch} while the radix (prefix) cache is on with the "
            "no_buffer Mamba strategy."
        )
        suggestions = [
            Suggestion(
                "--disable-radix-cache",
                None,
                "Turn the prefix cache off: speculative decoding works; repeated prompt prefixes are "
                "recomputed.",
            ),
            Suggestion(
                "--mamba-scheduler-strategy",
                "extra_buffer",
                "With SGLANG_ENABLE_SPEC_V2=1 in the environment, keeps the prefix cache; several Mamba "
                "state slots per request (more memory).",
            ),
        ]
        return Diagnosis(
            "Speculative decoding conflicts with the radix cache", detail, suggestions, "incompatible_flags"
        )
    detail = f"SGLang's argument checks rejected this combination of flags: {text[:300]}"
    return Diagnosis(
        "Incompatible flags",
        detail,
        [
            Suggestion(
                None, None, "Change one of the flags the message names; the rest of the launch is fine."
            )
        ],
        "incompatible_flags",
    )
