"""`sgtui fit`: will this SGLang launch fit in GPU memory, and if not, why and what would.

Imports only sgtui.core (no Textual, asyncssh or pynvml), so it answers in a blink. Exit 0 for "fits" or
"tight", 3 for "fails" (DESIGN.md "Exit codes and preflight"), 2 for bad input.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sgtui.core.errors import UserError

if TYPE_CHECKING:
    from sgtui.core.fit import FitReport
    from sgtui.core.model import ModelFacts

HELP = "predict whether an SGLang launch fits in GPU memory, and why not"

EXIT_FAILS = 3  # the verdict is "fails", so a script can gate a launch on it (0: fits or tight; 2: bad input)

EPILOG = """\
exit codes: 0 fits or tight, 3 fails (the report is still printed), 2 bad input.

examples:
  sgtui fit --gpu A6000 --gpus 2 --sglang 0.5.9 -- --model-path /models/Qwen3.6-27B --tp-size 2 \\
      --mem-fraction-static 0.85 --context-length 32768 --speculative-algorithm NEXTN
  sgtui fit --config config.json --gpu H100-80G --free-gib 78.5 --weights-gib 15 --json -- --tp-size 1
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument(
        "--config", metavar="PATH", help="config.json or model folder (default: --model-path)"
    )
    parser.add_argument(
        "--gpu", metavar="NAME|SIZE", help="GPU preset (A6000, H100-80G, ...) or size (49140MiB, 48GiB)"
    )
    parser.add_argument("--gpus", metavar="N", help="GPUs on the host (default: what the flags need)")
    parser.add_argument(
        "--sglang", metavar="VERSION", default="0.5.11", help="SGLang version (default 0.5.11)"
    )
    parser.add_argument(
        "--free-gib",
        metavar="X[,X...]",
        help='measured free GiB per GPU ("Load weight begin. avail mem="); one value, or one per GPU',
    )
    parser.add_argument(
        "--weights-gib", metavar="X", help='measured weight GiB per GPU ("Load weight end ... mem usage=")'
    )
    parser.add_argument(
        "--draft-weights-gib", metavar="X", help="draft/MTP weight GiB per GPU (default: estimated)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "sglang_flags", nargs=argparse.REMAINDER, help="-- then the flags for sglang.launch_server"
    )


def _number(option: str, text: str | None, *, integer: bool = False) -> Any:
    if text is None:
        return None
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        kind = "a whole number" if integer else "a number"
        raise UserError(f"{option} {text!r}: expected {kind}") from None
    if value < 0 or (integer and value < 1) or (not integer and not math.isfinite(value)):
        raise UserError(f"{option} {text!r}: must be {'at least 1' if integer else 'a non-negative number'}")
    return value


def _free_list(text: str | None) -> list[float] | None:
    """One value, or one per GPU separated by commas (then SGLang's balance check applies)."""
    if text is None:
        return None
    return [_number("--free-gib", part.strip()) for part in text.split(",")]


def _model_path(args: argparse.Namespace, model_path: str | None) -> Path:
    if args.config:
        return Path(args.config)
    if model_path and Path(model_path).expanduser().is_dir():
        return Path(model_path).expanduser()
    where = (
        f"--model-path {model_path!r} is not a local folder" if model_path else "no --model-path was given"
    )
    raise UserError(f"no model config: {where}; pass --config with a config.json or a model folder")


def run(args: argparse.Namespace) -> int:
    from sgtui.core.fit import fit
    from sgtui.core.gpus import guess_gpu_from_free, parse_gpu
    from sgtui.core.model import load_model_facts
    from sgtui.core.sglang.flags import parse_argv

    argv = list(args.sglang_flags)
    if argv and argv[0] == "--":
        argv = argv[1:]
    parsed = parse_argv(argv, args.sglang)
    spec = parsed.spec
    free_gib = _free_list(args.free_gib)
    weights_gib = _number("--weights-gib", args.weights_gib)
    draft_gib = _number("--draft-weights-gib", args.draft_weights_gib)
    n_gpus = _number("--gpus", args.gpus, integer=True)
    model = load_model_facts(_model_path(args, spec.model_path))
    notes = list(parsed.notes)
    nnodes = int(parsed.values.get("--nnodes") or 1)
    if nnodes > 1 and n_gpus is not None:  # TP across nodes: each GPU still holds 1/tp of the model
        n_gpus = int(n_gpus) * nnodes
        notes.append(f"--nnodes {nnodes}: --gpus counts one node's GPUs; the fit sizes {n_gpus} GPUs in all.")
    if args.gpu:
        gpu = parse_gpu(args.gpu)
    elif free_gib is not None:
        gpu = guess_gpu_from_free(max(free_gib))
        notes.append(
            f"No --gpu: the GPU total (which picks SGLang's defaults) is guessed from --free-gib: {gpu.name}."
        )
    else:
        raise UserError("--gpu is needed: a preset such as A6000 or H100-80G, or a size such as 49140MiB")
    if free_gib is not None and max(free_gib) > gpu.gib:
        raise UserError(
            f"--free-gib {max(free_gib):g}: more than the whole {gpu.name} ({gpu.gib:.2f} GiB); give the "
            "free memory per GPU before the launch (nvidia-smi's free column), or the right --gpu"
        )
    draft = None
    draft_path = spec.speculative_draft_model_path
    if draft_path and (Path(draft_path).expanduser() / "config.json").is_file():
        draft = load_model_facts(Path(draft_path).expanduser())
    report = fit(
        spec,
        model,
        gpu,
        n_gpus=n_gpus,
        version=args.sglang,
        free_gib=free_gib,
        weights_gib=weights_gib,
        draft_weights_gib=draft_gib,
        draft_model=draft,
    )
    if free_gib is not None and len(free_gib) > 1 and len(free_gib) != report.n_gpus:
        raise UserError(
            f"--free-gib {args.free_gib}: {len(free_gib)} values for the {report.n_gpus} GPUs this launch "
            "uses; give one value for all, or one per GPU"
        )
    report.notes.extend(notes)
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(render_text(report, model))
    return EXIT_FAILS if report.verdict == "fails" else 0


def _src(estimated: bool) -> str:
    return "estimated" if estimated else "given"


def render_text(report: FitReport, model: ModelFacts) -> str:
    """The compact human table: inputs, budget lines, pools, verdict, error, warnings."""
    r = report
    rows: list[tuple[str, str]] = []
    layers = f"{model.num_layers} layers"
    if model.is_hybrid_linear:
        kind = "linear attention" if model.is_gdn_hybrid else "Mamba2"
        layers += f" ({model.full_attention_layers} attention + {model.linear_attention_layers} {kind})"
    rows.append(("model", f"{model.architecture or model.model_type}, {layers}"))
    rows.append(("GPUs", f"{r.n_gpus} x {r.gpu_name} ({r.gpu_total_gib:.2f} GiB), TP {r.tp_size}"))
    rows.append(("rules", f"SGLang {r.sglang_version} (the {r.family} window)"))
    rows.append(
        ("free before load P", f"{r.baseline_free_gib:.2f} GiB per GPU ({_src(r.baseline_estimated)})")
    )
    weights = f"{r.weights_gib:.2f} GiB per GPU ({_src(r.weights_estimated)})"
    if r.draft_weights_gib:
        weights += f", draft {r.draft_weights_gib:.2f} GiB ({_src(r.draft_weights_estimated)})"
    rows.append(("weights W", weights))
    from sgtui.core.fit.report import printed_fraction

    auto = f"{printed_fraction(r.mem_fraction_static_auto):.4g}"
    how = "auto" if r.mem_fraction_static_is_auto else f"set; auto would be {auto}"
    rows.append(("mem-fraction-static", f"{printed_fraction(r.mem_fraction_static):.4g} ({how})"))
    slack_budget = r.baseline_free_gib * (1 - r.mem_fraction_static)
    reserve = r.available_after_weights_gib - slack_budget - r.rest_gib
    budget = f"rest = A - P*(1-mfs) = {r.available_after_weights_gib:.2f} - {slack_budget:.2f}"
    if reserve > 0.005:
        budget += f" - {reserve:.2f} (multimodal reserve)"
    rows.append(("static budget", f"{budget} = {r.rest_gib:.2f} GiB"))
    rows.extend(_budget_rows(r))
    if r.error is None or r.max_total_num_tokens > 0:
        if r.swa:
            rows.append(
                ("sliding window", f"full {r.swa['full_tokens']:,} / SWA {r.swa['swa_tokens']:,} tokens")
            )
        rows.append(
            ("max running requests", f"{r.max_running_requests} (context length {r.context_length:,})")
        )
        rows.append(
            (
                "slack",
                f"{r.slack_gib:.2f} GiB left for CUDA graphs and activations "
                f"(SGLang's estimate: {r.activation_estimate_gib:.2f} GiB)",
            )
        )
    log = r.predicted_log
    if log.get("k_size_gib") is not None:
        seen = f"K {log['k_size_gib']:.2f} GB, V {log['v_size_gib']:.2f} GB"
        if "mamba_cache_size" in log:
            seen += (
                f"; Mamba {log['mamba_cache_size']} slots, conv {log['mamba_conv_state_gib']:.2f} GB, "
                f"ssm {log['mamba_ssm_state_gib']:.2f} GB"
            )
        seen += f"; pool end avail {log['memory_pool_end_avail_gib']:.2f} GB"
        rows.append(("SGLang should log", seen))
    rows.append(("verdict", r.verdict.upper()))
    cause = _cause(r)
    if cause:
        rows.append(("why", cause))
    if r.error:
        rows.append(("error", r.error))
    width = max(len(k) for k, _ in rows)
    lines = [f"  {k.ljust(width)}  {v}" for k, v in rows]
    if r.fixes:
        lines.append("fixes (best first; each fitted again with the change applied):")
        for n, fix in enumerate(r.fixes, 1):
            value = "" if fix.value is True else f" {fix.value}"
            lines.append(f"  {n}. {fix.flag}{value} -> {fix.verdict}")
    if r.warnings:
        lines.append("warnings:")
        lines.extend(f"  - {w.message}" for w in r.warnings)
    if r.notes:
        lines.append("notes:")
        lines.extend(f"  - {n}" for n in r.notes)
    return "\n".join(lines)


def _budget_rows(r: FitReport) -> list[tuple[str, str]]:
    """What each pool took from the static budget and what was left for the KV pool, with the counts
    that made each one that large (the same lines as the JSON `budget`, for fits and fails alike)."""
    rows: list[tuple[str, str]] = []
    for line in r.budget:
        if line.key == "static_budget":
            continue
        sign, gib = ("=", line.gib) if line.key == "kv_pool" else ("-", -line.gib)
        count = f": {line.count}" if line.count else ""
        detail = f" ({line.detail})" if line.detail else ""
        rows.append((f"{sign} {line.label}", f"{gib:.2f} GiB{count}{detail}"))
    return rows


def _cause(r: FitReport) -> str:
    """When the pools ate the static budget: the biggest bite, against the budget it came from."""
    if r.verdict != "fails" or not r.budget or r.kv_pool_gib > 0:
        return ""
    bites = [b for b in r.budget if b.key not in ("static_budget", "kv_pool") and b.gib < 0]
    if not bites:
        return f"after the weights the static budget is {r.rest_gib:.2f} GiB: nothing is left for the KV pool"
    worst = min(bites, key=lambda b: b.gib)
    what = f" for {worst.count}" if worst.count else ""
    why = f"the {worst.label}{what} takes {-worst.gib:.2f} GiB of the {r.rest_gib:.2f} GiB static budget"
    kv = next((b for b in r.budget if b.key == "kv_pool"), None)
    if kv is None:
        return why
    return f"{why}; the KV pool would need {-kv.gib:.2f} GiB more to hold a single token"
