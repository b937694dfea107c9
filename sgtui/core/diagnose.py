"""From a classified log (and optionally a fit report) to what went wrong, the numbers that show it, and the
flag changes that fix it, each with its cost.

`fit` may be a `sgtui.core.fit.FitReport` or the dict of its `to_json()`; only the `sgtui fit --json`
contract keys are read, so the fit engine's internals can change freely.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sgtui.core.log_state import PHASE_LABELS, ErrorInfo
from sgtui.core.logs import NEW_STYLE, TRACE_CUT, LogAnalysis

_MAX_MFS = 0.98
_LOW_MFS = 0.5  # below this a --mem-fraction-static is a mistake, not a tuning choice
_MIN_SLACK_GIB = 2.0  # below this, CUDA graphs and activations rarely fit: shrink the weights instead
RAISE_MFS = "Raise"
LOWER_MFS = "Lower"
_HYBRID_CLASSES = re.compile(
    r"Qwen3Next|Qwen3_5|Qwen3\.5|Mamba|Hybrid|NemotronH|Jamba|FalconH|Lfm2|KimiLinear|Zamba"
)
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


@dataclass(frozen=True)
class Suggestion:
    """One change to make: a flag (or env var, or None for an action) and its value, and what it costs."""

    flag: str | None
    value: str | None
    why: str

    def to_json(self) -> dict[str, Any]:
        return {"flag": self.flag, "value": self.value, "why": self.why}


@dataclass(frozen=True)
class Diagnosis:
    title: str
    detail: str
    suggestions: list[Suggestion] = field(default_factory=list)
    error_class: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "detail": self.detail,
            "suggestions": [s.to_json() for s in self.suggestions],
            "error_class": self.error_class,
        }


@dataclass
class _Context:
    analysis: LogAnalysis
    error: ErrorInfo
    facts: dict[str, Any]
    fit: dict[str, Any] | None

    def num(self, name: str) -> float | None:
        value = self.facts.get(name)
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

    def fit_num(self, name: str) -> float | None:
        value = (self.fit or {}).get(name)
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

    @property
    def new_style(self) -> bool:
        return NEW_STYLE in self.analysis.state.notes

    @property
    def phase(self) -> str:
        return self.error.phase


def _fit_dict(fit: Any) -> dict[str, Any] | None:
    if fit is None:
        return None
    if isinstance(fit, Mapping):
        return dict(fit)
    to_json = getattr(fit, "to_json", None)
    if callable(to_json):
        data = to_json()
        return dict(data) if isinstance(data, Mapping) else None
    return None


def _gib(value: float | None) -> str:
    return "?" if value is None else f"{value:.2f} GiB"


def _fmt_mfs(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".") if value < 1 else "1"


def mfs_suggestion(current: float | None, target: float, cost: str, *, higher: bool = True) -> Suggestion:
    """A --mem-fraction-static change whose direction cannot be misread: the why starts with Raise or
    Lower (`higher` says which when the log does not show the value in use)."""
    target = round(target, 3)
    if current is not None:
        higher = target > current
    verb = RAISE_MFS if higher else LOWER_MFS
    if current is not None:
        start = f" from {_fmt_mfs(current)} to"
    else:  # the value in use is not in the log: a bound, so the direction holds whatever it was
        start = " to at least" if higher else " to at most"
    text = f"{verb} --mem-fraction-static{start} {_fmt_mfs(target)}"
    return Suggestion("--mem-fraction-static", _fmt_mfs(target), f"{text}: {cost}")


def _raise_cost(baseline: float | None, target: float) -> str:
    slack = f" ({baseline * (1 - target):.2f} GiB)" if baseline else ""
    return (
        "a larger share of each GPU for weights and the KV/Mamba pools, and less slack"
        f"{slack} for CUDA graphs and activations"
    )


LOWER_COST = "a smaller KV pool (fewer tokens cached), and more slack for CUDA graphs and activations"


def _phase_words(phase: str) -> str:
    if phase == "starting":
        return "starting up"
    if phase == "distributed_init":
        return "setting up the GPUs' communication (distributed init)"
    return "serving requests" if phase == "ready" else PHASE_LABELS.get(phase, phase)


# ---- per error class -------------------------------------------------------------------------------------


def _not_enough_memory(ctx: _Context) -> Diagnosis:
    f = ctx.num
    baseline = f("load_weight_begin_avail_gib") or ctx.fit_num("baseline_free_gib")
    weights = f("weight_mem_gib") or ctx.fit_num("weights_gib")
    after = f("avail_mem_after_weights_gib")
    derived = ""
    if baseline is None and weights is not None and after is not None:
        baseline, derived = weights + after, " (free after the weights + the weights)"
    if after is None and baseline is not None and weights is not None:
        after = baseline - weights
    mfs = f("mem_fraction_static") or ctx.fit_num("mem_fraction_static")
    draft = f("draft_weight_mem_gib")
    lines = [f"SGLang had no memory left for the KV cache pool when it sized it ({_phase_words(ctx.phase)})."]
    mamba_pool = ctx.error.values.get("pool") == "mamba"
    if mamba_pool:
        reqs = ctx.error.values.get("max_num_reqs")
        lines[0] = (
            "The hybrid model's Mamba/linear-attention state cache got too little memory to serve even one "
            f"request ({_phase_words(ctx.phase)}"
            + (f"; SGLang computed room for {int(reqs)} requests" if isinstance(reqs, int | float) else "")
            + ")."
        )
    if baseline is not None:
        lines.append(f"Free memory per GPU before the weights (the baseline): {_gib(baseline)}{derived}.")
    if weights is not None:
        lines.append(
            f"The weights took {_gib(weights)} per GPU" + (f", leaving {_gib(after)}." if after else ".")
        )
    if draft is not None:
        lines.append(f"The speculative draft model's weights took another {_gib(draft)} per GPU.")
    rest = None
    if mfs is not None and baseline is not None:
        slack = baseline * (1 - mfs)
        lines.append(
            f"--mem-fraction-static {_fmt_mfs(mfs)} keeps {_gib(slack)} (baseline x (1 - {_fmt_mfs(mfs)})) "
            "back for CUDA graphs and activations"
        )
        if after is not None:
            rest = after - slack
            lines[-1] += f", so the pools got {_gib(after)} - {_gib(slack)} = {_gib(rest)}."
            if rest <= 0:
                lines.append("Nothing was left: the weights alone exceed the static budget.")
        else:
            lines[-1] += "."
    elif mfs is not None:
        lines.append(f"--mem-fraction-static was {_fmt_mfs(mfs)}.")
    suggestions: list[Suggestion] = []
    if mamba_pool:
        mrr = ctx.num("max_running_requests")
        suggestions.append(
            Suggestion(
                "--max-running-requests",
                str(max(1, int(mrr) // 2)) if mrr else None,
                "Fewer concurrent requests need fewer Mamba state slots; fewer requests run at once.",
            )
        )
    suggestions += _mamba_speculative_suggestions(ctx, rest, lines)
    suggestions += _extra_buffer_suggestion(ctx)
    need = max(
        (v for v in (f("min_viable_mem_fraction_static"), f("min_viable_mem_fraction_static_mtp")) if v),
        default=None,
    )
    if need is None and after is not None and baseline:
        need = 1 - after / baseline
    if need is not None and mfs is not None and need < mfs:
        # The pools did get memory; something inside them (Mamba state, speculative copies) took it all.
        lines.append(
            f"The pools did get {_gib(rest)}, so what they hold before the KV cache (Mamba state, its "
            "speculative copies, the request table) took it all."
        )
        need = None
    shrink = need is None and mfs is None
    if need is not None:
        target = math.ceil((need + 0.02) * 100) / 100
        lines.append(f"The smallest --mem-fraction-static that leaves the pools any memory is {need:.3f}.")
        slack_ok = baseline is None or baseline * (1 - target) >= _MIN_SLACK_GIB
        if target <= _MAX_MFS and slack_ok:
            suggestions.append(mfs_suggestion(mfs, target, _raise_cost(baseline, target)))
        else:
            shrink = True
            lines.append("That leaves too little slack for CUDA graphs and activations: shrink the weights.")
    elif mfs is not None and mfs < _LOW_MFS:
        # Far below SGLang's own choice (0.8-0.9 on most GPUs): a wrapper or a typo set it, and +0.05 steps
        # would take many failed launches.
        lines.append(
            f"{_fmt_mfs(mfs)} is far below what SGLang picks by itself (about 0.8-0.9), so almost nothing "
            "was left for the pools."
        )
        suggestions.append(mfs_suggestion(mfs, 0.85, _raise_cost(baseline, 0.85)))
    elif mfs is not None:
        target = min(0.95, round(mfs + 0.05, 2))
        if target > mfs:
            suggestions.append(mfs_suggestion(mfs, target, _raise_cost(baseline, target)))
    else:
        suggestions.append(
            Suggestion(
                "--mem-fraction-static",
                None,
                f"{RAISE_MFS} --mem-fraction-static (e.g. by 0.05): {_raise_cost(None, 0.9)}",
            )
        )
    if shrink or (weights and baseline and weights > 0.85 * baseline):
        suggestions += _smaller_weights(ctx, weights)
    suggestions = _with_fit(ctx, suggestions)
    title = (
        "Not enough GPU memory for the Mamba state cache"
        if mamba_pool
        else "Not enough GPU memory for the KV cache"
    )
    return Diagnosis(title, " ".join(lines), suggestions, "not_enough_memory")


def _mamba_speculative_suggestions(ctx: _Context, rest: float | None, lines: list[str]) -> list[Suggestion]:
    """Hybrid (Mamba/linear-attention) models with speculative decoding: state per request x draft tokens."""
    fit = ctx.fit or {}
    mamba = fit.get("mamba") if isinstance(fit.get("mamba"), Mapping) else None
    mrr_now = ctx.num("max_running_requests") or ctx.fit_num("max_running_requests")
    if mamba:
        spec = mamba.get("spec_state_gib") or 0.0
        state = mamba.get("state_gib") or 0.0
        budget = ctx.fit_num("rest_gib") or rest
        mrr = ctx.fit_num("max_running_requests") or mrr_now
        if not spec or not budget or not mrr or spec < 0.25 * budget:
            return []
        per_request = (spec + state) / mrr
        draft = fit.get("speculative_num_draft_tokens") or ctx.facts.get("speculative_num_draft_tokens")
        target = _largest_power_of_two_under(mrr, lambda n: n * per_request <= 0.25 * budget)
        tokens = f" x {draft} draft tokens" if draft else ""
        lines.append(
            f"Speculative decoding keeps Mamba state for every running request{tokens}: {int(mrr)} requests "
            f"reserve {spec:.2f} GiB of the {budget:.2f} GiB pool budget "
            f"(plus {state:.2f} GiB of regular state)."
        )
        if target is None:
            return []
        return [
            Suggestion(
                "--max-running-requests",
                str(target),
                f"{target} concurrent requests reserve about {target * per_request:.2f} GiB instead of "
                f"{spec + state:.2f} GiB, leaving the rest to the KV cache; fewer requests run at once.",
            )
        ]
    hybrid = (
        bool(_HYBRID_CLASSES.search(str(ctx.facts.get("model_class", "")))) or "mamba_cache_size" in ctx.facts
    )
    spec_on = ctx.facts.get("speculative_algorithm") not in (None, "None", "")
    if not (hybrid and spec_on):
        return []
    lines.append(
        "This is a hybrid (Mamba/linear-attention) model with speculative decoding: each running request "
        "keeps Mamba state for every draft token, taken from the same pool budget before the KV cache."
    )
    current = f" from {int(mrr_now)}" if mrr_now else ""
    return [
        Suggestion(
            "--max-running-requests",
            "8",
            f"Cap concurrent requests{current} to 8: the speculative Mamba state shrinks in proportion, "
            "leaving memory for the KV cache; fewer requests run at once.",
        )
    ]


def _largest_power_of_two_under(limit: float, ok: Callable[[int], bool]) -> int | None:
    n = 1
    best = None
    while n < limit:
        if ok(n):
            best = n
        n *= 2
    return best


def _extra_buffer_suggestion(ctx: _Context) -> list[Suggestion]:
    fit_mamba = (ctx.fit or {}).get("mamba")
    fit_strategy = fit_mamba.get("strategy") if isinstance(fit_mamba, Mapping) else None
    strategy = str(ctx.facts.get("mamba_strategy") or fit_strategy or "")
    if "extra_buffer" not in strategy:
        return []
    flag = "--mamba-radix-cache-strategy" if ctx.new_style else "--mamba-scheduler-strategy"
    return [
        Suggestion(
            flag,
            "no_buffer",
            "extra_buffer keeps several Mamba state slots per request (4-5x the state); no_buffer keeps one, "
            "at the cost of prefix-cache hits on hybrid models.",
        )
    ]


def _smaller_weights(ctx: _Context, weights: float | None) -> list[Suggestion]:
    tp = ctx.facts.get("tp_size")
    out: list[Suggestion] = []
    if isinstance(tp, int) and tp >= 1:
        per = f" ({_gib(weights / 2)} of weights per GPU instead of {_gib(weights)})" if weights else ""
        out.append(
            Suggestion(
                "--tp-size",
                str(tp * 2),
                f"Split the model over {tp * 2} GPUs{per}; needs that many free GPUs.",
            )
        )
    else:
        out.append(
            Suggestion("--tp-size", None, "Split the model over more GPUs; needs that many free GPUs.")
        )
    if ctx.facts.get("quantization") in (None, "None") and "quantization_loaded" not in ctx.facts:
        out.append(
            Suggestion(
                "--quantization",
                "fp8",
                "FP8 weights take about half the memory of bf16 ones, at a small accuracy cost "
                "(or use a pre-quantized checkpoint).",
            )
        )
    return out


_SGTUI_FIT_OPTIONS = frozenset(
    {"--draft-weights-gib", "--weights-gib", "--free-gib", "--gpu", "--gpus", "--config"}
)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _fit_mfs(current: float | None, value: float, code: str, note: str) -> Suggestion:
    higher = "lower" not in code if current is None else value > current
    cost = _raise_cost(None, value) if higher else LOWER_COST
    return mfs_suggestion(current, value, cost + note, higher=higher)


def _with_fit(ctx: _Context, suggestions: list[Suggestion]) -> list[Suggestion]:
    """Merge the fit engine's advice: its --mem-fraction-static figure beats a rule of thumb, its request
    limit is quoted, and flags only it suggests are appended (options of `sgtui fit` itself are not)."""
    advice: dict[str, Mapping[str, Any]] = {}
    for warning in (ctx.fit or {}).get("warnings") or []:
        if isinstance(warning, Mapping) and warning.get("flag") and warning["flag"] not in _SGTUI_FIT_OPTIONS:
            advice.setdefault(str(warning["flag"]), warning)
    current = ctx.num("mem_fraction_static")
    merged: list[Suggestion] = []
    for s in suggestions:
        warning = advice.pop(s.flag, None) if s.flag else None
        value = _number(warning.get("suggested_value")) if warning else None
        if value is not None and s.flag == "--mem-fraction-static":
            mine = _number(s.value) if s.value else None
            if mine is None or value > mine:
                s = _fit_mfs(current, value, str(warning.get("code", "")), " (the fit engine's figure)")
        elif value is not None:
            s = Suggestion(s.flag, s.value, f"{s.why} The fit engine's limit: {value:g}.")
        merged.append(s)
    for flag, warning in advice.items():
        value = warning.get("suggested_value")
        number = _number(value)
        message = str(warning.get("message", ""))
        if flag == "--mem-fraction-static" and number is not None:
            merged.append(_fit_mfs(current, number, str(warning.get("code", "")), ""))
        else:
            merged.append(Suggestion(flag, None if value is None or value is True else str(value), message))
    return merged


def _graph_bs_flag(ctx: _Context) -> str:
    return "--cuda-graph-max-bs-decode" if ctx.new_style else "--cuda-graph-max-bs"


def _graph_memory_suggestions(ctx: _Context) -> list[Suggestion]:
    mfs = ctx.num("mem_fraction_static")
    out: list[Suggestion] = []
    bs = ctx.num("cuda_graph_max_bs") or ctx.num("cuda_graph_max_bs_captured")
    target_bs = str(max(1, int(bs) // 2)) if bs else "16"
    now = f" from {int(bs)}" if bs else ""
    out.append(
        Suggestion(
            _graph_bs_flag(ctx),
            target_bs,
            f"Capture CUDA graphs for batch sizes up to {target_bs}{now}: less graph memory; larger decode "
            "batches run without graphs (slower).",
        )
    )
    if mfs is not None:
        out.append(mfs_suggestion(mfs, max(0.5, round(mfs - 0.05, 2)), LOWER_COST))
    else:
        out.append(
            Suggestion("--mem-fraction-static", None, f"{LOWER_MFS} --mem-fraction-static: {LOWER_COST}")
        )
    if ctx.facts.get("enable_torch_compile") is True:
        out.append(
            Suggestion(
                "--enable-torch-compile",
                "false",
                "Drop --enable-torch-compile: compiled graphs need extra memory at capture time; decoding is "
                "somewhat slower without it.",
            )
        )
    return out


def _cuda_oom(ctx: _Context) -> Diagnosis:
    values = ctx.error.values
    lines = [f"CUDA ran out of memory while {_phase_words(ctx.phase)}."]
    if values.get("tried_gib") is not None:
        lines.append(f"It tried to allocate {_gib(values['tried_gib'])}")
        if values.get("gpu_free_gib") is not None:
            lines[-1] += f" with {_gib(values['gpu_free_gib'])} free of {_gib(values.get('gpu_total_gib'))}"
        lines[-1] += "."
    baseline = ctx.num("load_weight_begin_avail_gib")
    if ctx.phase in ("starting", "distributed_init", "loading_weights"):
        if baseline is not None:
            lines.append(f"{_gib(baseline)} per GPU was free when the weights started loading.")
        lines.append("The weights do not fit in what is free on each GPU.")
        suggestions = _smaller_weights(ctx, ctx.num("weight_mem_gib"))
        suggestions.append(
            Suggestion(
                None, None, "Check the GPU panel for other processes (or a killed run) still holding memory."
            )
        )
        return Diagnosis(
            "CUDA out of memory while loading the weights", " ".join(lines), suggestions, "cuda_oom"
        )
    if ctx.phase in ("serving", "ready"):
        mfs = ctx.num("mem_fraction_static")
        suggestions = [
            mfs_suggestion(mfs, max(0.5, round(mfs - 0.05, 2)), LOWER_COST)
            if mfs is not None
            else Suggestion("--mem-fraction-static", None, f"{LOWER_MFS} --mem-fraction-static: {LOWER_COST}")
        ]
        chunk = ctx.num("chunked_prefill_size")
        target = str(int(chunk) // 2) if chunk and chunk > 0 else "2048"
        suggestions.append(
            Suggestion(
                "--chunked-prefill-size",
                target,
                "Smaller prefill chunks need less activation memory; long prompts take more steps.",
            )
        )
        lines.append("Activations of large batches ran past the slack the static pools left.")
        return Diagnosis("CUDA out of memory while serving", " ".join(lines), suggestions, "cuda_oom")
    pool_end = ctx.num("memory_pool_end_avail_gib")
    if pool_end is not None:
        lines.append(
            f"After the pools were allocated {_gib(pool_end)} per GPU was left for graphs and activations."
        )
    return Diagnosis(
        f"CUDA out of memory while {_phase_words(ctx.phase)}",
        " ".join(lines),
        _graph_memory_suggestions(ctx),
        "cuda_oom",
    )


def _cuda_graph_failed(ctx: _Context) -> Diagnosis:
    text = ctx.error.text
    oom = bool(ctx.error.values.get("oom")) or "out of memory" in text
    pool_end = ctx.num("memory_pool_end_avail_gib")
    begin = ctx.num("cuda_graph_begin_avail_gib")
    numbers = ""
    if pool_end is not None or begin is not None:
        numbers = f" Free per GPU when capture began: {_gib(begin if begin is not None else pool_end)}."
    if oom:
        values = ctx.error.values
        tried = ""
        if values.get("tried_gib") is not None:
            tried = f" It tried to allocate {_gib(values['tried_gib'])}"
            if values.get("gpu_free_gib") is not None:
                tried += f" with {_gib(values['gpu_free_gib'])} free of {_gib(values.get('gpu_total_gib'))}"
            tried += "."
        detail = (
            "CUDA graph capture ran out of memory: the graphs did not fit in the slack the pools left."
            + tried
            + numbers
        )
        return Diagnosis(
            "CUDA graph capture ran out of memory",
            detail,
            _graph_memory_suggestions(ctx),
            "cuda_graph_failed",
        )
    if ctx.error.values.get("cut"):
        frame = ctx.error.values.get("last_frame")
        where = f" (its last frame shown is in {frame})" if frame else ""
        detail = (
            f"CUDA graph capture crashed: the log ends inside its traceback{where}, before the exception "
            "line, so the error itself is not in this log." + numbers
        )
    else:
        detail = (
            f"CUDA graph capture crashed with an error that is not about memory: "
            f"{text.strip()[:300].rstrip('.')}. The kernel named in the traceback failed while being "
            "captured." + numbers
        )
    suggestions = [
        Suggestion(
            "--disable-cuda-graph",
            None,
            "Start without CUDA graphs to confirm the capture is the problem; decoding is much slower "
            "without them.",
        ),
        Suggestion(
            "--attention-backend",
            None,
            "Try another attention backend (e.g. triton or flashinfer): the failing kernel may be "
            "backend-specific.",
        ),
        Suggestion(
            None, None, "Upgrade SGLang (and its kernel packages): capture crashes are often fixed there."
        ),
    ]
    return Diagnosis("CUDA graph capture failed", detail, suggestions, "cuda_graph_failed")


def _nccl(ctx: _Context) -> Diagnosis:
    text = ctx.error.text.strip()
    notes = ctx.analysis.state.notes
    lines = [
        f"NCCL (the GPU-to-GPU communication library) failed while {_phase_words(ctx.phase)}: "
        f"{text[:240].rstrip('.')}."
    ]
    suggestions: list[Suggestion] = []
    if "nccl_shm" in notes or ctx.error.values.get("shm"):
        lines.append(
            "It could not create a shared-memory segment in /dev/shm: the container's /dev/shm is too small."
        )
        suggestions.append(
            Suggestion(
                "--shm-size",
                "32g",
                "A docker run flag (or use --ipc=host; for LXC, enlarge /dev/shm): Docker's default 64 MB is "
                "too small for NCCL's buffers.",
            )
        )
    if "Watchdog caught" in text:
        lines.append(
            "A collective timed out: usually another rank died or hung first; look above for its error."
        )
    suggestions.append(
        Suggestion(
            "NCCL_P2P_DISABLE",
            "1",
            "An environment variable: route GPU-to-GPU traffic through host memory when peer-to-peer is "
            "broken (common in VMs and containers); slower all-reduce.",
        )
    )
    tp = ctx.facts.get("tp_size")
    if isinstance(tp, int) and tp > 1:
        suggestions.append(
            Suggestion(
                "--tp-size",
                str(tp // 2),
                f"Try {tp // 2} GPUs: if that works, one GPU or link in the {tp}-GPU set is at fault "
                "(needs the model to fit on fewer GPUs).",
            )
        )
    suggestions.append(
        Suggestion("NCCL_DEBUG", "INFO", "An environment variable: NCCL prints why it failed.")
    )
    return Diagnosis("NCCL failed", " ".join(lines), suggestions, "nccl")


def _unsupported_model(ctx: _Context) -> Diagnosis:
    arch = ctx.error.values.get("architectures") or ctx.error.values.get("model_type") or "this architecture"
    detail = (
        f"This SGLang does not know the model's architecture ({arch}); it failed while "
        f"{_phase_words(ctx.phase)}. Newer SGLang releases add architectures regularly."
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


def _port_in_use(ctx: _Context) -> Diagnosis:
    port = ctx.error.values.get("port")
    http_port = ctx.facts.get("port")
    suggestions: list[Suggestion] = []
    if isinstance(port, int) and isinstance(http_port, int) and port != http_port:
        detail = (
            f"Port {port} is already taken by another process; SGLang needs it for its internal "
            f"communication (it derives those ports from --port {http_port}, or NCCL's from --nccl-port)."
        )
        suggestions.append(
            Suggestion(
                "--port", None, "Pick another --port far from the old one: the internal ports move with it."
            )
        )
    elif isinstance(port, int) or isinstance(http_port, int):
        port = port if isinstance(port, int) else http_port
        detail = f"The HTTP server could not bind port {port}: another process is listening on it."
        suggestions.append(
            Suggestion("--port", str(port + 1), "Use a free port; clients must use the new one.")
        )
    else:
        detail = "A port SGLang needs is already in use by another process."
        suggestions.append(Suggestion("--port", None, "Use a free port; clients must use the new one."))
    if isinstance(port, int):
        suggestions.append(
            Suggestion(
                None,
                None,
                f"Or stop what holds it: `ss -ltnp 'sport = :{port}'` names the process (often an earlier "
                "run that is still alive).",
            )
        )
    return Diagnosis("Port already in use", detail, suggestions, "port_in_use")


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


def _bad_arguments(ctx: _Context) -> Diagnosis:
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


def _incompatible_flags(ctx: _Context) -> Diagnosis:
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


def _memory_unbalanced(ctx: _Context) -> Diagnosis:
    detail = (
        "The GPUs of this launch had very different amounts of free memory: another process holds memory on "
        "at least one of them (SGLang sizes every rank from the poorest one, so it refuses)."
    )
    values = ctx.error.values
    poorest = values.get("min_per_gpu_memory", values.get("pre_model_load_memory"))
    local = values.get("local_gpu_memory")
    if isinstance(poorest, int | float) and isinstance(local, int | float):
        detail += (
            f" The poorest GPU had {_gib(float(poorest))} free, this rank's GPU {_gib(float(local))} "
            "(SGLang wants at least 90% of it everywhere)."
        )
    suggestions = [
        Suggestion(
            None,
            None,
            "Find the process in the GPU panel (or nvidia-smi) and stop it; a killed run can hold "
            "memory until its whole process group is gone.",
        ),
        Suggestion("CUDA_VISIBLE_DEVICES", None, "An environment variable: launch on GPUs that are free."),
    ]
    return Diagnosis("GPU memory unbalanced across ranks", detail, suggestions, "memory_unbalanced")


def _oom_killed(ctx: _Context) -> Diagnosis:
    detail = (
        f"A process was killed with SIGKILL while {_phase_words(ctx.phase)}, and no Python error explains "
        "it: this is the host's OOM killer (host RAM, not GPU memory), or someone ran kill -9."
    )
    suggestions = [
        Suggestion(None, None, "Confirm on the host: `dmesg -T | grep -i -E 'oom|killed process'`."),
        Suggestion(
            None,
            None,
            "Give the host (or the LXC/Docker container) more RAM or swap, or stop other "
            "memory-hungry processes; weight loading peaks in host RAM.",
        ),
    ]
    if ctx.facts.get("enable_hierarchical_cache") is True:
        suggestions.append(
            Suggestion(
                "--enable-hierarchical-cache",
                "false",
                "Drop the hierarchical cache: its host-memory KV pool takes RAM; fewer prefixes stay cached.",
            )
        )
    return Diagnosis("Killed by the host's OOM killer", detail, suggestions, "oom_killed")


def _child_failed(ctx: _Context) -> Diagnosis:
    values = ctx.error.values
    if values.get("peer_failed"):
        detail = (
            f"This rank waited for its peers while {_phase_words(ctx.phase)}, and another rank never "
            f"finished (line {ctx.error.line}). That rank's own error is not in this log: with several nodes "
            "it is in the other node's log, otherwise further up (an OOM, a missing file, a slow disk)."
        )
        suggestions = [
            Suggestion(None, None, "Read the other ranks' logs (every node's) for the first traceback."),
            Suggestion(None, None, "Check each host for OOM kills: `dmesg -T | grep -i oom`."),
        ]
        return Diagnosis("Another rank failed", detail, suggestions, "child_failed")
    detail = (
        f"A child process died while {_phase_words(ctx.phase)} (line {ctx.error.line}: "
        f"{ctx.error.text.strip()[:160]}), but its error is not in this log."
    )
    if TRACE_CUT in ctx.analysis.state.notes:
        frame = ctx.facts.get("last_traceback_frame")
        where = f" (the last frame shown is in {frame})" if frame else ""
        detail += (
            f" Its traceback is here but the log ends inside it{where}, before the line that names the error."
        )
    suggestions = [
        Suggestion(None, None, "Read the whole log, not its tail: the child's traceback may be far above."),
        Suggestion("--log-level", "debug", "More detail from each rank on the next launch."),
        Suggestion(None, None, "Check the host for OOM kills: `dmesg -T | grep -i oom`."),
    ]
    return Diagnosis("A child process failed", detail, suggestions, "child_failed")


_WARMUP_STATUS = re.compile(r"Response \[(\d{3})\]")
_KV_EXHAUSTED = ("out of memory. Try to lower your batch size", "runs out of memory", "Prefill out of memory")


def _warmup_failed(ctx: _Context, status: str) -> Diagnosis:
    """The server came up, but its own warm-up request to itself got an HTTP error back."""
    port = ctx.facts.get("port")
    address = str(ctx.facts.get("uvicorn_address") or "")
    if not isinstance(port, int) and address.rpartition(":")[2].isdigit():
        port = int(address.rpartition(":")[2])
    where = f"127.0.0.1:{port}" if isinstance(port, int) else "its own port"
    detail = (
        f"The server started, but the warm-up request it sends to itself ({where}) got HTTP {status}, so it "
        "shut down. A 502/503/403 here almost always comes from an HTTP proxy in the environment "
        "(http_proxy/https_proxy) that also catches local addresses; a 401/403 can also be an --api-key "
        "the warm-up does not carry."
    )
    suggestions = [
        Suggestion(
            "no_proxy",
            "localhost,127.0.0.1",
            "An environment variable for the launch: local requests bypass the proxy; other traffic "
            "still uses it.",
        ),
        Suggestion(
            None,
            None,
            "Or unset http_proxy/https_proxy (and their upper-case forms) in the launch environment.",
        ),
    ]
    return Diagnosis(f"The server's warm-up request got HTTP {status}", detail, suggestions, "other")


def _kv_exhausted(ctx: _Context) -> Diagnosis:
    text = ctx.error.text.strip()
    mrr = ctx.num("max_running_requests")
    detail = (
        f"The KV cache pool ran out of free slots for a batch while serving: {text[:200]} Requests that are "
        "admitted together need more tokens than the pool has free."
    )
    suggestions = [
        Suggestion(
            "--max-running-requests",
            str(max(1, int(mrr) // 2)) if mrr else None,
            "Fewer requests at once need fewer KV slots; throughput drops under load.",
        ),
        Suggestion(
            "--chunked-prefill-size",
            None,
            "Smaller prefill chunks claim KV slots more gradually; long prompts take more steps.",
        ),
        Suggestion(
            None,
            None,
            "Upgrade SGLang if --page-size is above 1: older releases mis-counted free pages.",
        ),
    ]
    return Diagnosis("The KV cache ran out while serving", detail, suggestions, "other")


# Environment failures that are none of the contract's classes but have one well-known fix each:
# (needles any of which names it, title, what it means, what to do).
_KNOWN_OTHERS: tuple[tuple[tuple[str, ...], str, str, str], ...] = (
    (
        ("GatedRepoError", "401 Client Error", "403 Client Error", "Access to model", "gated repo"),
        "The model download was refused",
        "Hugging Face refused the download: the model is gated or private and this environment has no "
        "accepted token for it.",
        "Accept the model's licence on its Hugging Face page, then set HF_TOKEN in the launch environment "
        "(or download the model and pass its local folder as --model-path).",
    ),
    (
        (
            "is not a local folder and is not a valid model identifier",
            "Repository Not Found",
            "does not appear to have a file named",
            "RepositoryNotFoundError",
        ),
        "The model path does not name a model",
        "--model-path is neither a folder with a config.json nor a model id Hugging Face knows.",
        "Check --model-path: a local folder must hold config.json and the weights; a hub id is "
        "'organisation/name'.",
    ),
    (
        ("couldn't connect to 'https://huggingface.co'", "LocalEntryNotFoundError", "HF_HUB_OFFLINE"),
        "No connection to Hugging Face",
        "The model is not in the local cache and Hugging Face could not be reached.",
        "Download the model where there is network (huggingface-cli download) and pass its folder as "
        "--model-path, or fix the proxy settings of the launch environment.",
    ),
    (
        ("no kernel image is available for execution on the device",),
        "The GPU is not supported by these kernels",
        "The installed PyTorch/SGLang kernels were not built for this GPU's architecture (too old a GPU, "
        "or a wheel for another CUDA version).",
        "Install the SGLang/PyTorch build that matches the GPU and CUDA version, or use SGLang's Docker "
        "image for it.",
    ),
    (
        ("driver on your system is too old", "CUDA driver version is insufficient"),
        "The NVIDIA driver is too old",
        "The installed PyTorch needs a newer NVIDIA driver than the host has.",
        "Upgrade the host's NVIDIA driver, or install a PyTorch/SGLang build for the older CUDA version.",
    ),
    (
        ("ModuleNotFoundError: No module named", "ImportError: cannot import name", "undefined symbol"),
        "A Python package is missing or broken",
        "The environment SGLang runs in lacks a package it imports, or has one built against other versions.",
        "Reinstall SGLang with its extras in that environment (`pip install -U 'sglang[all]'`), or use "
        "SGLang's Docker image.",
    ),
)


def _known_other(ctx: _Context) -> Diagnosis | None:
    text = ctx.error.text
    for needles, title, meaning, fix in _KNOWN_OTHERS:
        if any(needle in text for needle in needles):
            detail = f"{meaning} (line {ctx.error.line}: {text.strip()[:200]})"
            return Diagnosis(title, detail, [Suggestion(None, None, fix)], "other")
    return None


def _other(ctx: _Context) -> Diagnosis:
    text = ctx.error.text
    death = ctx.error.death_text or ""
    known = _known_other(ctx)
    if known is not None:
        return known
    status = _WARMUP_STATUS.search(text)
    if status and ("warmup" in death or "warmup" in text or "_wait_and_warmup" in text):
        return _warmup_failed(ctx, status.group(1))
    if status and ctx.phase == "serving" and "AssertionError" in text:
        return _warmup_failed(ctx, status.group(1))
    if any(needle in text for needle in _KV_EXHAUSTED):
        return _kv_exhausted(ctx)
    if ctx.error.values.get("cut"):
        frame = ctx.error.values.get("last_frame")
        where = f" (its last frame shown is in {frame})" if frame else ""
        detail = (
            f"SGLang died with a traceback while {_phase_words(ctx.phase)}, and the log ends inside it"
            f"{where}: the exception line that says what went wrong is not in this log."
        )
        suggestions = [
            Suggestion(None, None, "Get the whole log: the exception line follows the traceback shown."),
            Suggestion("--log-level", "debug", "More detail from each rank on the next launch."),
        ]
        return Diagnosis("Launch failed (the error line is cut off)", detail, suggestions, "other")
    detail = (
        f"SGLang stopped with an error sgtui has no rule for, while {_phase_words(ctx.phase)} "
        f"(line {ctx.error.line}): {ctx.error.text.strip()[:300].rstrip('.')}."
    )
    source = ctx.error.values.get("source")
    if source:
        frame = ctx.error.values.get("frame")
        detail += f" The failing line{f' (in {frame})' if frame else ''}: `{source}`."
    suggestions = []
    if ctx.phase == "loading_weights" and source and "shape" in source:
        suggestions.append(
            Suggestion(
                None,
                None,
                "The checkpoint's tensors do not have the shapes of the model SGLang built: check that "
                "--model-path, --load-format and --quantization match the checkpoint (a pre-quantized "
                "checkpoint needs the quantization it was made with).",
            )
        )
    suggestions += [
        Suggestion(
            None, None, "Search the exception text in SGLang's GitHub issues; it often names the fix."
        ),
        Suggestion(
            None, None, "Upgrade SGLang if a newer release exists: many startup crashes are fixed there."
        ),
    ]
    return Diagnosis("Launch failed", detail, suggestions, "other")


_BUILDERS: dict[str, Callable[[_Context], Diagnosis]] = {
    "not_enough_memory": _not_enough_memory,
    "cuda_oom": _cuda_oom,
    "cuda_graph_failed": _cuda_graph_failed,
    "nccl": _nccl,
    "unsupported_model": _unsupported_model,
    "port_in_use": _port_in_use,
    "bad_arguments": _bad_arguments,
    "incompatible_flags": _incompatible_flags,
    "memory_unbalanced": _memory_unbalanced,
    "oom_killed": _oom_killed,
    "child_failed": _child_failed,
    "other": _other,
}


def _advisories(analysis: LogAnalysis) -> list[Diagnosis]:
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
        suggestions = [
            Suggestion(
                "--context-length",
                str(tokens),
                "Match the context to what the KV pool can hold; longer prompts are rejected.",
            )
        ]
        if isinstance(mfs, float) and mfs < 0.93:
            target = min(0.93, round(mfs + 0.05, 2))
            suggestions.append(
                mfs_suggestion(mfs, target, _raise_cost(facts.get("load_weight_begin_avail_gib"), target))
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


def diagnose(analysis: LogAnalysis, fit: Any = None) -> list[Diagnosis]:
    """What went wrong (first) and what else is worth fixing; empty when the log shows nothing to fix."""
    out: list[Diagnosis] = []
    error = analysis.error
    if error is not None:
        ctx = _Context(analysis, error, dict(analysis.facts), _fit_dict(fit))
        out.append(_BUILDERS.get(error.error_class, _other)(ctx))
    out += _advisories(analysis)
    return out
