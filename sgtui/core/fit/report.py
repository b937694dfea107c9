"""What `fit()` returns: the budget lines, pools, verdict and warnings, and its JSON form.

`FitReport.to_json()` is the `sgtui fit --json` contract (DESIGN.md); `predicted_log` holds the values
SGLang would print (keys named like `sgtui explain`'s facts) for "predicted vs actual" views and the
simulator's SGLang stand-in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class FitWarning:
    """One thing the user should know, with the flag to change and the value that would work."""

    code: str
    message: str
    flag: str | None = None
    suggested_value: Any = None


Warning = FitWarning  # the name the architecture contract uses


@dataclass(frozen=True)
class Fix:
    """One change that would make a failing (or tight) launch start, with the verdict of its own fit.

    `FitReport.fixes` is the one ranking every place uses (the TUI's question, `sgtui fit`, the
    preflight, the diagnosis after a failure): a fix whose own fit is "fits" before a "tight" one."""

    flag: str
    value: Any
    verdict: str  # the fit's verdict with this fix applied
    why: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"flag": self.flag, "value": self.value, "verdict": self.verdict, "why": self.why}


@dataclass(frozen=True)
class MambaPool:
    """The linear-attention state pool of one GPU (sizes in GiB; the pool pads one slot)."""

    slot_bytes: int
    max_mamba_cache_size: int
    ratio: int
    strategy: str
    ssm_dtype: str
    state_gib: float  # allocated: (K+1) slots
    spec_state_gib: float  # the speculative intermediate state the budget reserved
    conv_state_gib: float
    ssm_state_gib: float
    intermediate_ssm_gib: float
    intermediate_conv_gib: float


@dataclass(frozen=True)
class BudgetLine:
    """One step of the static budget, in SGLang's order: the budget itself, what each pool took from
    it (negative), and last what was left for the KV pool (negative when the launch fails there).

    `key` is stable for programs (static_budget, speculative_state, mamba_state, kv_pool); `label`
    and `count` are for people: `count` names what made the line that large ("48 requests x 4 draft
    tokens", "48 slots"); `detail` says where that number came from."""

    key: str
    label: str
    gib: float
    count: str = ""
    detail: str = ""

    @property
    def item(self) -> str:
        return f"{self.label} ({self.count})" if self.count else self.label


@dataclass
class FitReport:
    """The predicted startup of one launch: inputs, budget lines, pools, verdict and advice.

    Sizes are GiB per GPU (SGLang's "GB"). `rest_gib` is the static budget A - P*(1-mfs) before the
    Mamba state; `kv_pool_gib` what is left of it for the KV pool; `slack_gib` what stays free for
    CUDA graphs and activations after every pool (and, before 0.5.23, the draft model); `budget` the
    steps from one to the other.

    A failing report keeps every step SGLang computed before it stopped: `budget`, `mamba` (its K
    as computed, possibly negative; its pools count no slot below zero), `kv_pool_gib` (negative when
    the pools ate the budget), `max_total_num_tokens` as SGLang computes it before its check:
    floor(left bytes / cell bytes), page-floored, so <= 0 when nothing is left (0.5.23 stops one step
    earlier, at "Loaded weights leave no GPU memory"; the same formula gives the shortfall there), and
    `max_running_requests` as the requests the speculative state was sized for (the user's value or
    SGLang's 48); each stays 0 or None when SGLang failed before computing it (weights that do not
    load, unbalanced GPUs, refused arguments)."""

    sglang_version: str
    family: str
    gpu_name: str
    gpu_total_gib: float
    n_gpus: int
    tp_size: int
    baseline_free_gib: float
    baseline_estimated: bool
    mem_fraction_static: float
    mem_fraction_static_auto: float
    mem_fraction_static_is_auto: bool
    weights_gib: float
    weights_estimated: bool
    draft_weights_gib: float
    draft_weights_estimated: bool
    available_after_weights_gib: float
    rest_gib: float
    kv_pool_gib: float
    kv_cell_bytes: int
    kv_cache_dtype: str
    page_size: int
    max_total_num_tokens: int
    max_running_requests: int
    context_length: int
    chunked_prefill_size: int
    cuda_graph_max_bs: int
    speculative_num_draft_tokens: int | None
    mamba: MambaPool | None
    swa: dict[str, int] | None
    req_to_token_gib: float
    draft_kv_gib: float
    slack_gib: float
    activation_estimate_gib: float
    verdict: str
    error: str | None
    warnings: list[FitWarning] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    predicted_log: dict[str, float | int | None] = field(default_factory=dict)
    dtype: str = ""  # the model's runtime dtype ("bfloat16")
    budget: list[BudgetLine] = field(default_factory=list)
    fixes: list[Fix] = field(default_factory=list)
    baseline_error_gib: float | None = None  # +/- GiB of an estimated P (the baseline table's)

    def first_fix(self) -> Fix | None:
        """The fix offered first: the first ranked one that fits, else the first tight one; before the
        ranking exists for a report, the first warning that names a flag and a value."""
        return first_fix(self.fixes, self.warnings)

    def to_json(self) -> dict[str, Any]:
        """The `sgtui fit --json` object (DESIGN.md contract keys first; sizes in GiB)."""
        mamba = None
        if self.mamba is not None:
            m = self.mamba
            mamba = {
                "slot_bytes": m.slot_bytes,
                "max_mamba_cache_size": m.max_mamba_cache_size,
                "state_gib": _r(m.state_gib),
                "spec_state_gib": _r(m.spec_state_gib),
                "slots_per_request": m.ratio,
                "strategy": m.strategy,
                "ssm_dtype": m.ssm_dtype,
                "conv_state_gib": _r(m.conv_state_gib),
                "ssm_state_gib": _r(m.ssm_state_gib),
                "intermediate_ssm_gib": _r(m.intermediate_ssm_gib),
                "intermediate_conv_gib": _r(m.intermediate_conv_gib),
            }
        return {
            "sglang_version": self.sglang_version,
            "gpu_total_gib": _r(self.gpu_total_gib),
            "baseline_free_gib": _r(self.baseline_free_gib),
            "mem_fraction_static": self.mem_fraction_static,
            "mem_fraction_static_auto": printed_fraction(self.mem_fraction_static_auto),
            "weights_gib": _r(self.weights_gib),
            "draft_weights_gib": _r(self.draft_weights_gib),
            "rest_gib": _r(self.rest_gib),
            "kv_cell_bytes": self.kv_cell_bytes,
            "max_total_num_tokens": self.max_total_num_tokens,
            "max_running_requests": self.max_running_requests,
            "context_length": self.context_length,
            "mamba": mamba,
            "swa": self.swa,
            "slack_gib": _r(self.slack_gib),
            "verdict": self.verdict,
            "error": self.error,
            "warnings": [
                {"code": w.code, "message": w.message, "flag": w.flag, "suggested_value": w.suggested_value}
                for w in self.warnings
            ],
            "family": self.family,
            "gpu_name": self.gpu_name,
            "n_gpus": self.n_gpus,
            "tp_size": self.tp_size,
            "baseline_estimated": self.baseline_estimated,
            "baseline_error_gib": self.baseline_error_gib,
            "mem_fraction_static_is_auto": self.mem_fraction_static_is_auto,
            "weights_estimated": self.weights_estimated,
            "draft_weights_estimated": self.draft_weights_estimated,
            "available_after_weights_gib": _r(self.available_after_weights_gib),
            "kv_pool_gib": _r(self.kv_pool_gib),
            "kv_cache_dtype": self.kv_cache_dtype,
            "dtype": self.dtype,
            "page_size": self.page_size,
            "chunked_prefill_size": self.chunked_prefill_size,
            "cuda_graph_max_bs": self.cuda_graph_max_bs,
            "speculative_num_draft_tokens": self.speculative_num_draft_tokens,
            "req_to_token_gib": _r(self.req_to_token_gib),
            "draft_kv_gib": _r(self.draft_kv_gib),
            "activation_estimate_gib": _r(self.activation_estimate_gib),
            "predicted_log": self.predicted_log,
            "notes": self.notes,
            "fixes": [f.to_json() for f in self.fixes],
            "budget": [
                {"key": b.key, "item": b.item, "gib": _r(b.gib), "count": b.count, "detail": b.detail}
                for b in self.budget
            ],
        }


def first_fix(fixes: Sequence[Fix], warnings: Sequence[FitWarning]) -> Fix | None:
    """`FitReport.first_fix()` of its `fixes` and `warnings` (also what a report's JSON gives back)."""
    found = first_offered(fixes, lambda f: f.verdict)
    if found is not None or fixes:
        return found
    for w in warnings:
        if w.flag and w.flag.startswith("--") and w.suggested_value is not None:
            return Fix(w.flag, w.suggested_value, "unknown", w.message)
    return None


def first_offered(fixes: Sequence[T], verdict_of: Callable[[T], Any]) -> T | None:
    """The first of ranked `fixes` (Fix objects, or their JSON dicts in `sgtui fit --json`'s "fixes")
    that fits, else the first tight one: the one rule every place that offers a fix uses."""
    for wanted in ("fits", "tight"):
        for f in fixes:
            if verdict_of(f) == wanted:
                return f
    return None


def printed_fraction(value: float) -> float:
    """SGLang's automatic mem-fraction-static as a person reads it: its formula rounds to 3 decimals,
    the VLM factor applied afterwards is not rounded (the server_args line prints the whole float,
    0.7546087499999999 for worked example A on 0.5.9), so 4 decimals keep it apart from the plain
    value without the float noise. `predicted_log["mem_fraction_static"]` keeps the whole float."""
    return round(value, 4)


def _r(x: float) -> float:
    return round(x, 4)
