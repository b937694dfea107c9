"""Things worth knowing about a launch that did not fail because of them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sgtui.core.logs.diagnosis.common import (
    Diagnosis,
    Suggestion,
    mfs_suggestion,
    raise_cost,
)

if TYPE_CHECKING:
    from sgtui.core.logs.analysis import LogAnalysis


def advisories(analysis: LogAnalysis) -> list[Diagnosis]:
    """Things worth knowing about a launch that did not fail because of them."""
    facts = analysis.facts
    out: list[Diagnosis] = []
    profiled = facts.get("profiled_max_total_num_tokens")
    failed_on_it = analysis.error is not None and analysis.error.values.get("profiled") is not None
    if isinstance(profiled, int) and profiled <= 0 and not failed_on_it:
        weights = facts.get("weight_mem_gib")
        after = facts.get("avail_mem_after_weights_gib")
        numbers = ""
        if isinstance(weights, float) and isinstance(after, float):
            numbers = f" The weights take {weights:.2f} GiB per GPU and leave {after:.2f} GiB."
        out.append(
            Diagnosis(
                "No memory left for the KV cache",
                f"SGLang profiled {profiled:,} tokens for the KV pool: after the weights and the "
                f"--mem-fraction-static slack nothing is left, and the server fails or misbehaves as soon as "
                f"it allocates.{numbers}",
                [
                    Suggestion(
                        "--tp-size",
                        None,
                        "Split the model over more GPUs (or use a quantized checkpoint) so the weights leave "
                        "room for the pool.",
                    )
                ],
                "not_enough_memory",
            )
        )
    tokens = facts.get("max_total_num_tokens") or facts.get("kv_tokens")
    context = facts.get("context_length")
    if isinstance(tokens, int) and isinstance(context, int) and 0 < tokens < context:
        mfs = facts.get("mem_fraction_static")
        capped = facts.get("max_total_tokens_arg") == tokens  # --max-total-tokens sized it, not memory
        suggestions = [
            Suggestion(
                "--context-length",
                str(tokens),
                "Match the context to what the KV pool can hold; longer prompts are rejected.",
            )
        ]
        if capped:
            suggestions.insert(
                0,
                Suggestion(
                    "--max-total-tokens",
                    None,
                    f"The pool is this run's --max-total-tokens ({tokens:,}): raise it or leave it out (then "
                    "the memory left after the weights sizes the pool).",
                ),
            )
        elif isinstance(mfs, float) and mfs < 0.93:
            target = min(0.93, round(mfs + 0.05, 2))
            suggestions.append(
                mfs_suggestion(mfs, target, raise_cost(facts.get("load_weight_begin_avail_gib"), target))
            )
        out.append(
            Diagnosis(
                "KV pool smaller than one full-length request",
                f"The KV pool holds {tokens:,} tokens but the context length is {context:,}: a single "
                "request near the full context cannot be served, and concurrency suffers.",
                suggestions,
            )
        )
    return out
