"""What sgtui knows before a launch starts: the fit's verdict and the checks made on the target.

One shape for every place a launch starts (the TUI's `l`/`r`, headless `sgtui launch`, its
`--json-events` first event; DESIGN.md "Exit codes and preflight"). The fit's part comes from
`core/fit` (verdict, SGLang's predicted error, the first ranked fix that fits); each target check
(port free, GPUs not held by others, model path, installed release) is one `Check`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Verdict = Literal["fits", "tight", "fails", "unknown"]

# The check names, in the order they are shown.
CHECK_NAMES = ("fit", "port", "gpus", "model_path", "sglang_release")


@dataclass(frozen=True)
class Check:
    """One thing checked on the target before a launch; `message` is one line for people.

    `blocking` checks that fail stop a launch like a failing fit (the port is taken, the GPUs are held
    by another user's process); the others are warnings shown beside the question."""

    name: str
    ok: bool
    message: str
    blocking: bool = True

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "message": self.message}


@dataclass(frozen=True)
class Preflight:
    """The fit's verdict for this launch on this target, the fix offered first, and the checks.

    `verdict` is "unknown" when the fit could not be computed; `why_unknown` then says why (no GPU
    sample yet, no nvidia-smi, an unreadable model config). `fix` is (flag, value) of the first ranked
    fix whose own fit is "fits" (or, when none fits, the first "tight" one), None when there is none."""

    verdict: Verdict
    error: str | None = None
    fix: tuple[str, Any] | None = None
    checks: list[Check] = field(default_factory=list)
    why_unknown: str | None = None

    @property
    def failed_checks(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    @property
    def blocks(self) -> bool:
        """A launch from here would fail as predicted: ask (TUI) or refuse with exit 3 (headless)."""
        return self.verdict == "fails" or any(not c.ok and c.blocking for c in self.checks)

    def to_event(self) -> dict[str, Any]:
        """The first `--json-events` event of `sgtui launch` (DESIGN.md)."""
        return {
            "event": "preflight",
            "verdict": self.verdict,
            "error": self.error,
            "fix": list(self.fix) if self.fix is not None else None,
            "checks": [c.to_json() for c in self.checks],
        }


# A GPU with at most this much in use counts as empty for the fit (nvidia-smi shows a few MiB on an idle
# GPU); above it, what is in use is taken off the fit's baseline for that GPU.
EMPTY_GPU_MIB = 64.0


@dataclass(frozen=True)
class LiveGpu:
    """One GPU the run asks for, as nvidia-smi on the target reads it now."""

    index: int
    name: str
    total_mib: int
    used_mib: float | None


def fit_on_target(
    spec: Any, model: Any, gpus: list[LiveGpu], *, version: str, n_gpus: int | None = None
) -> Any:
    """The fit for a launch on the target now: its release's rules, its GPUs' size (the smallest asked
    for), and the memory already in use on each of them (another process's memory is not free for SGLang).

    The baseline before weights is the fit's own estimate for that GPU (`core/fit`), less what is in use
    on each GPU, one value per GPU so SGLang's minimum over ranks and its unbalanced-memory check apply."""
    from sgtui.core.fit import fit
    from sgtui.core.gpus import GpuSpec

    smallest = min(gpus, key=lambda g: g.total_mib)
    gpu = GpuSpec(smallest.name, smallest.total_mib)
    report = fit(spec, model, gpu, n_gpus=n_gpus, version=version)
    used = [g.used_mib or 0.0 for g in gpus]
    if max(used) <= EMPTY_GPU_MIB:
        return report
    free = [report.baseline_free_gib - u / 1024 for u in used]
    live = fit(spec, model, gpu, n_gpus=n_gpus, version=version, free_gib=free)
    live.notes.append(
        f"Memory already in use on the target ({in_use_text(gpus)}, nvidia-smi) is taken off the estimated "
        f"{report.baseline_free_gib:.2f} GiB free before the weights."
    )
    return live


def in_use_text(gpus: list[LiveGpu]) -> str:
    """`GPU 1 20.00 GiB, ...` for each GPU whose memory in use counts (over `EMPTY_GPU_MIB`); "" for none."""
    held = [g for g in gpus if (g.used_mib or 0.0) > EMPTY_GPU_MIB]
    return ", ".join(f"GPU {g.index} {(g.used_mib or 0.0) / 1024:.2f} GiB" for g in held)


def free_now_note(gpus: list[LiveGpu]) -> str:
    """What a fit made by `fit_on_target` was sized from, in a few words (the TUI's fit panel)."""
    taken = in_use_text(gpus)
    return f"sized from what is free now: {taken} in use" if taken else "sized from what is free now"


def from_fit(report: Any, checks: list[Check], why_unknown: str | None = None) -> Preflight:
    """The preflight of a launch from its `FitReport` (None: the fit could not be computed, `why_unknown`
    says why) and the target's checks. The fix is `FitReport.first_fix()`, the one ranking's first."""
    return from_fit_json(report.to_json() if report is not None else None, checks, why_unknown)


def from_fit_json(
    report: dict[str, Any] | None, checks: list[Check], why_unknown: str | None = None
) -> Preflight:
    """The same from the report's JSON (`sgtui fit --json`, what the TUI keeps)."""
    fit_check = _fit_check(report, why_unknown)
    if report is None:
        return Preflight("unknown", None, None, [fit_check, *checks], why_unknown or "the fit was not run")
    verdict = report.get("verdict") or "unknown"
    first = first_fix_json(report) if verdict in ("fails", "tight") else None  # "fits" needs none
    fix = (first.flag, first.value) if first is not None else None
    return Preflight(verdict, report.get("error"), fix, [fit_check, *checks])


def first_fix_json(report: dict[str, Any] | None) -> Any:
    """`FitReport.first_fix()` of a report's JSON (its `fixes` and `warnings`): the same one ranking."""
    from sgtui.core.fit.report import FitWarning, Fix, first_fix

    report = report or {}
    fixes = [
        Fix(str(f.get("flag")), f.get("value"), str(f.get("verdict")), str(f.get("why") or ""))
        for f in report.get("fixes") or []
    ]
    warnings = [
        FitWarning(str(w.get("code", "")), str(w.get("message", "")), w.get("flag"), w.get("suggested_value"))
        for w in report.get("warnings") or []
    ]
    return first_fix(fixes, warnings)


def _fit_check(report: dict[str, Any] | None, why_unknown: str | None) -> Check:
    if report is None:
        return Check("fit", False, f"the fit is not known: {why_unknown}", blocking=False)
    gpus = f"{report.get('n_gpus', '?')} x {report.get('gpu_name', 'GPU')}"
    where = f"{gpus}, SGLang {report.get('sglang_version')}"
    verdict = str(report.get("verdict"))
    if verdict == "fails":
        return Check("fit", False, f"FAILS on {where}: {report.get('error')}", blocking=False)
    slack = report.get("slack_gib")
    room = f" ({slack:.2f} GiB slack)" if isinstance(slack, int | float) else ""
    return Check("fit", True, f"{verdict.upper()} on {where}{room}", blocking=False)


def fix_text(fix: tuple[str, Any] | None) -> str:
    """`--flag value` as a person types it (a store_true flag alone)."""
    if fix is None:
        return ""
    flag, value = fix
    return flag if value is True else f"{flag} {value}"


def check_lines(pre: Preflight) -> list[str]:
    """One line per target check, marked ok / FAILED / warning (a failed check that does not block); the
    fit's own line is left to the headline that states the verdict."""
    lines = []
    for c in pre.checks:
        if c.name == "fit":
            continue
        mark = "ok" if c.ok else ("FAILED" if c.blocking else "warning")
        lines.append(f"{c.name}: {mark}: {c.message}")
    return lines


def block_reason(pre: Preflight) -> str:
    """Why a launch from here would fail as predicted, in a few words: the fit's verdict and the names
    of the failed blocking checks ("" when nothing blocks)."""
    parts = ["the fit predicts it fails"] if pre.verdict == "fails" else []
    failed = [c.name for c in pre.checks if not c.ok and c.blocking]
    if failed:
        parts.append("failed check" + ("s" if len(failed) > 1 else "") + ": " + ", ".join(failed))
    return "; ".join(parts)
