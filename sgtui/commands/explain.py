"""`sgtui explain LOGFILE|-`: read an SGLang log and say how far the launch got, what killed it, and what to
change. Pure core code: no Textual, no asyncssh.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path
from typing import Any, BinaryIO

from sgtui.core.bounded import load_json
from sgtui.core.errors import UserError

HELP = "read an SGLang log: startup timeline, the error and its root cause"

_FACT_LABELS = (
    ("model_path", "model", "{}"),
    ("tp_size", "tensor parallel", "{}"),
    ("mem_fraction_static", "--mem-fraction-static", "{}"),
    ("load_weight_begin_avail_gib", "free before weights", "{:.2f} GiB"),
    ("weight_mem_gib", "weights per GPU", "{:.2f} GiB"),
    ("draft_weight_mem_gib", "draft weights per GPU", "{:.2f} GiB"),
    ("avail_mem_after_weights_gib", "free after weights", "{:.2f} GiB"),
    ("mamba_cache_size", "Mamba state slots", "{:,}"),
    ("kv_tokens", "KV pool tokens", "{:,}"),
    ("memory_pool_end_avail_gib", "free after pools", "{:.2f} GiB"),
    ("cuda_graph_mem_gib", "CUDA graph memory", "{:.2f} GiB"),
    ("max_total_num_tokens", "max_total_num_tokens", "{:,}"),
    ("max_running_requests", "max running requests", "{:,}"),
    ("context_length", "context length", "{:,}"),
    ("available_gpu_mem_gib", "free when ready", "{:.2f} GiB"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "logfile", metavar="LOGFILE", help="an SGLang server log, or - to read standard input"
    )
    parser.add_argument("--json", action="store_true", help="print the analysis as one JSON object")
    parser.add_argument(
        "--fit-json",
        metavar="PATH",
        help="a `sgtui fit --json` report for the same launch: sharper memory advice",
    )


def read_log(name: str) -> str:
    """A small file's text (undecodable bytes replaced), for `--fit-json`; errors are UserErrors."""
    if name == "-":
        return sys.stdin.buffer.read().decode("utf-8", errors="replace")
    with _open_log(name, "a file holding `sgtui fit --json`'s output (--fit-json)") as stream:
        return stream.read().decode("utf-8", errors="replace")


def _open_log(name: str, what: str = "the path of an SGLang log") -> BinaryIO:
    path = Path(name).expanduser()
    try:
        return path.open("rb")
    except FileNotFoundError:
        raise UserError(f"{name}: no such file; give {what}, or - to read stdin") from None
    except IsADirectoryError:
        raise UserError(f"{name} is a directory; give {what}") from None
    except PermissionError:
        raise UserError(f"{name}: permission denied; check the file's permissions") from None
    except OSError as exc:
        raise UserError(f"{name}: cannot read it ({exc.strerror or exc})") from None


def analyse_log(name: str) -> Any:
    """The log through the one analysis path, streamed in bounded memory (`-` is standard input); a log
    compressed by logrotate (gzip, bzip2, xz) is read through its decompressor; one that is not text at
    all is refused rather than read as a log that says nothing."""
    from sgtui.commands.log_input import checked_log
    from sgtui.core.logs import classify_file

    if name == "-":
        with checked_log(sys.stdin.buffer, "standard input") as stream:
            return classify_file(stream)
    with _open_log(name) as raw, checked_log(raw, name) as stream:
        try:
            return classify_file(stream)
        except OSError as exc:
            raise UserError(f"{name}: cannot read it ({exc.strerror or exc})") from None


def _read_fit(name: str | None) -> dict[str, Any] | None:
    if name is None:
        return None
    text = read_log(name)
    try:
        data = load_json(text, name)
    except json.JSONDecodeError as exc:
        raise UserError(
            f"{name}, line {exc.lineno}: not JSON ({exc.msg}); pass the output of `sgtui fit --json`"
        ) from None
    if not isinstance(data, dict):
        raise UserError(f"{name}: expected a JSON object from `sgtui fit --json`")
    return data


def run(args: argparse.Namespace) -> int:
    from sgtui.core.logs import diagnose

    if getattr(args, "fit_json", None) == "-" and args.logfile == "-":
        raise UserError("--fit-json - and LOGFILE - both read standard input; give one of them as a file")
    fit = _read_fit(getattr(args, "fit_json", None))
    analysis = analyse_log(args.logfile)
    diagnoses = diagnose(analysis, fit)
    if args.json:
        report = analysis.to_json()
        report["diagnosis"] = [d.to_json() for d in diagnoses]
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    sys.stdout.write(render(args.logfile, analysis, diagnoses))  # outside text is cleaned in render
    return 0


def _fmt(template: str, value: Any) -> str:
    try:
        return template.format(value)
    except (TypeError, ValueError):
        return str(value)


def _values_text(values: dict[str, Any]) -> str:
    parts = [f"{k}={v}" for k, v in values.items() if v is not None and k != "label"]
    return ", ".join(parts)


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 120 else f"{seconds:.0f} s"


def _time_lines(analysis: Any) -> list[str]:
    """Stalls inside the log (gaps past the phase's limit) and how long the phase it ends in had run."""
    from sgtui.core.logs.stall import phase_words

    state = analysis.state
    out = [f"Stall inside the log: {gap['text']}" for gap in state.gaps]
    end = state.phase_at_end
    if end and "ran_s" in end:
        label = phase_words(state, end["phase"])  # with the ranks still in it when others went on
        idle = end.get("idle_s")
        quiet = f", {_minutes(idle)} of it without progress" if idle else ""
        out.append(
            f"The log ends while {label}: that phase had run {_minutes(end['ran_s'])} at its last line"
            f"{quiet} (a stall after {_minutes(end['limit_s'])}: {end['basis']})"
        )
    return out


def _root_lines(analysis: Any, error: Any) -> list[str]:
    """Where the failure began (rank, node), what it was raised from, and what followed from it."""
    from sgtui.core.logs.ranks import node_of

    out: list[str] = []
    rank = getattr(error, "rank", None)
    if rank:
        node = node_of(rank, analysis.facts)
        out.append(f"  failed first on {rank}" + (f" (node {node})" if node is not None else ""))
    for text in error.values.get("context", ()):
        out.append(f"  raised while handling: {str(text).strip()[:200]}")
    for c in getattr(error, "consequences", ()):
        who = f" {c.rank}" if c.rank else ""
        out.append(f"  then, as a consequence (line {c.line}{who}, {c.kind}): {c.text[:160]}")
    return out


def render(name: str, analysis: Any, diagnoses: list[Any]) -> str:
    """The human report: outcome, timeline with gaps, phase durations, facts, the error and its diagnosis."""
    from sgtui.core.logs.prefix import strip_controls
    from sgtui.core.logs.state import PHASE_LABELS

    out: list[str] = []
    error = analysis.error
    source = "standard input" if name == "-" else name
    out.append(f"{source}: {analysis.line_count} lines")
    if error is not None and analysis.stalled:
        where = PHASE_LABELS.get(error.phase, error.phase)
        out.append(f"Outcome: STALLED while {where}: {error.text}")
    elif error is not None:
        where = PHASE_LABELS.get(error.phase, error.phase)
        out.append(f"Outcome: FAILED ({error.error_class}) at line {error.line}, while {where}")
    else:
        phase = PHASE_LABELS.get(analysis.state.phase, analysis.state.phase)
        out.append(f"Outcome: {analysis.outcome}, phase: {phase}")
    if analysis.reversed_order:
        out.append("(the file is newest-first, a cloud-logging export; read oldest-first)")
    out += _time_lines(analysis)
    milestones = analysis.milestones
    if analysis.reversed_order:
        milestones = sorted(milestones, key=lambda m: (m.seconds is None, m.seconds or 0.0))
    if milestones:
        out.append("")
        out.append("Startup timeline")
        out.append(f"  {'line':>6}  {'time':<19}  {'+s':>7}  {'milestone':<22}  {'ranks':<10}  values")
        previous: float | None = None
        for m in milestones:
            gap = "" if m.seconds is None or previous is None else f"{m.seconds - previous:+.1f}"
            if m.seconds is not None:
                previous = m.seconds
            ranks = ",".join(sorted(m.ranks)) if m.ranks else "-"
            if len(ranks) > 10:
                ranks = f"{len(m.ranks)} ranks"
            values = _values_text(m.values)
            out.append(f"  {m.line:>6}  {m.time or '-':<19}  {gap:>7}  {m.kind:<22}  {ranks:<10}  {values}")
        durations = analysis.state.durations()
        if durations:
            parts = [f"{PHASE_LABELS.get(p, p)} {s:.1f} s" for p, s in durations.items()]
            out.append("  phases: " + ", ".join(parts))
    for phase, progress in analysis.state.progress.items():
        if analysis.state.phase != "ready" and "percent" in progress:
            out.append(
                f"  {PHASE_LABELS.get(phase, phase)}: {progress['percent']}% "
                f"({progress.get('done')}/{progress.get('total')})"
            )
    facts = [
        (label, _fmt(t, analysis.facts[k]))
        for k, label, t in _FACT_LABELS
        if analysis.facts.get(k) is not None
    ]
    if facts:
        out.append("")
        out.append("Numbers from the log")
        width = max(len(label) for label, _ in facts)
        out += [f"  {label:<{width}}  {value}" for label, value in facts]
    if error is not None:
        out.append("")
        out.append(f"Error (line {error.line}): {error.text.strip()[:400]}")
        if error.death_line is not None and error.death_line != error.line:
            out.append(
                f"  the launch died at line {error.death_line}: {(error.death_text or '').strip()[:200]}"
            )
        out += _root_lines(analysis, error)
    for d in diagnoses:
        out.append("")
        out.append(f"Diagnosis: {d.title}")
        out += textwrap.wrap(d.detail, width=106, initial_indent="  ", subsequent_indent="  ")
        for s in d.suggestions:
            head = " ".join(p for p in (s.flag, s.value) if p) or "do"
            out += textwrap.wrap(
                f"-> {head}: {s.why}", width=106, initial_indent="  ", subsequent_indent="     "
            )
    for line, text in analysis.state.warnings:
        out.append(f"warning (line {line}): {text}")
    # every line may quote the log: no control character reaches the terminal (escape sequences, C1)
    return "\n".join(strip_controls(line) for line in "\n".join(out).split("\n")) + "\n"
