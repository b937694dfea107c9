"""From a classified log (and optionally a fit report) to what went wrong, the numbers that show it, and the
flag changes that fix it, each with its cost: one builder per error class (memory, cuda, comms, arguments,
process, other), then advisories.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sgtui.core.logs.diagnosis.advisories import advisories
from sgtui.core.logs.diagnosis.arguments import (
    bad_arguments,
    incompatible_flags,
    nearest_flags,
    unsupported_model,
)
from sgtui.core.logs.diagnosis.common import Context, Diagnosis, Suggestion, fit_dict, mfs_suggestion
from sgtui.core.logs.diagnosis.comms import nccl, port_in_use
from sgtui.core.logs.diagnosis.cuda import cuda_graph_failed, cuda_oom, transformers_fallback
from sgtui.core.logs.diagnosis.memory import lead_with_fit_fix, memory_unbalanced, not_enough_memory
from sgtui.core.logs.diagnosis.other import other
from sgtui.core.logs.diagnosis.process import child_failed, oom_killed, stalled

if TYPE_CHECKING:
    from sgtui.core.logs.analysis import LogAnalysis

__all__ = ["Diagnosis", "Suggestion", "diagnose", "mfs_suggestion", "nearest_flags"]

_BUILDERS: dict[str, Callable[[Context], Diagnosis]] = {
    "not_enough_memory": not_enough_memory,
    "cuda_oom": cuda_oom,
    "cuda_graph_failed": cuda_graph_failed,
    "nccl": nccl,
    "unsupported_model": unsupported_model,
    "port_in_use": port_in_use,
    "bad_arguments": bad_arguments,
    "incompatible_flags": incompatible_flags,
    "memory_unbalanced": memory_unbalanced,
    "oom_killed": oom_killed,
    "child_failed": child_failed,
    "stalled": stalled,
    "other": other,
}


def diagnose(analysis: LogAnalysis, fit: Any = None) -> list[Diagnosis]:
    """What went wrong (first) and what else is worth fixing; empty when the log shows nothing to fix."""
    out: list[Diagnosis] = []
    error = analysis.error
    if error is not None:
        ctx = Context(analysis, error, dict(analysis.facts), fit_dict(fit))
        if transformers_fallback(ctx) is not None:
            ctx.fit = None  # the fit models SGLang's own sharding; the Transformers fallback does not do it
        out.append(lead_with_fit_fix(_BUILDERS.get(error.error_class, other)(ctx), ctx.fit))
    out += advisories(analysis)
    return out
