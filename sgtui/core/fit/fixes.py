"""The one ranking of fixes (`FitReport.fixes`): every change the advice suggests, each fitted again.

advice.py finds the values that would work, one flag at a time; here each of those is applied to the
launch and the whole fit re-run, so a fix carries the verdict of its own launch. The ranking is that
verdict first (a fix that "fits" before one that leaves the launch "tight"; one whose verdict cannot be
known, or that still fails, last), then the advice's own order of importance. The TUI's question, the
headless preflight, `sgtui fit` and the diagnosis after a failure all take `FitReport.first_fix()`,
so one launch never gets two different first fixes from two places.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from sgtui.core.errors import UserError
from sgtui.core.fit.report import FitReport, Fix
from sgtui.core.sglang.flags import LaunchSpec

# The launch flags a fix may carry, and the LaunchSpec field each sets.
FIX_FIELDS: dict[str, str] = {
    "--mem-fraction-static": "mem_fraction_static",
    "--max-running-requests": "max_running_requests",
    "--context-length": "context_length",
    "--mamba-ssm-dtype": "mamba_ssm_dtype",
    "--mamba-scheduler-strategy": "mamba_strategy",
    "--mamba-radix-cache-strategy": "mamba_strategy",
    "--disable-radix-cache": "disable_radix_cache",
    "--tp-size": "tp_size",
    "--cuda-graph-max-bs": "cuda_graph_max_bs",
    "--kv-cache-dtype": "kv_cache_dtype",
    "--swa-full-tokens-ratio": "swa_full_tokens_ratio",
}
# Flags whose fix changes what a measured per-GPU figure means (weights per GPU at another TP size).
_RESHARDS = frozenset({"--tp-size"})
_RANK = {"fits": 0, "tight": 1, "unknown": 2, "fails": 3}


def apply_fix(spec: LaunchSpec, flag: str, value: Any) -> LaunchSpec:
    """`spec` with one fix applied (its `values` too, so a launch built from them carries it)."""
    field = FIX_FIELDS[flag]
    return replace(spec, **{field: value}, values={**spec.values, flag: value})


def rank_fixes(
    report: FitReport, recompute: Callable[[LaunchSpec], FitReport], spec: LaunchSpec, *, measured: bool
) -> list[Fix]:
    """Each warning that names a launch flag and a value, fitted again with it applied, in rank order.
    `measured`: P or W were given per GPU, so a fix that reshards cannot be fitted (verdict unknown)."""
    seen: set[tuple[str, str]] = set()
    ranked: list[tuple[int, int, Fix]] = []
    for order, warning in enumerate(report.warnings):
        flag, value = warning.flag, warning.suggested_value
        if flag not in FIX_FIELDS or value is None or (flag, repr(value)) in seen:
            continue
        seen.add((flag, repr(value)))
        verdict = "unknown"
        if not (measured and flag in _RESHARDS):
            try:
                verdict = recompute(apply_fix(spec, flag, value)).verdict
            except UserError:
                verdict = "unknown"  # e.g. more GPUs than the host has
        ranked.append((_RANK[verdict], order, Fix(flag, value, verdict, warning.message)))
    return [fix for _, _, fix in sorted(ranked, key=lambda r: (r[0], r[1]))]
