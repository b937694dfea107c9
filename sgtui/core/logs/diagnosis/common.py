"""Shared by every diagnosis: `Diagnosis`, `Suggestion`, the context a builder reads, the
--mem-fraction-static wording, and the merge of the fit engine's advice.

`fit` may be a `sgtui.core.fit.FitReport` or the dict of its `to_json()`; only the `sgtui fit --json`
contract keys are read, so the fit engine's internals can change freely.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sgtui.core.logs.state import NEW_STYLE, PHASE_LABELS, ErrorInfo

if TYPE_CHECKING:
    from sgtui.core.logs.analysis import LogAnalysis

RAISE_MFS = "Raise"
LOWER_MFS = "Lower"


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
class Context:
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


def fit_dict(fit: Any) -> dict[str, Any] | None:
    if fit is None:
        return None
    if isinstance(fit, Mapping):
        return dict(fit)
    to_json = getattr(fit, "to_json", None)
    if callable(to_json):
        data = to_json()
        return dict(data) if isinstance(data, Mapping) else None
    return None


def gib(value: float | None) -> str:
    return "?" if value is None else f"{value:.2f} GiB"


def fmt_mfs(value: float) -> str:
    """A fraction as given: 0.88, 0.835, and a tiny one in its own digits (0.0001, never "0")."""
    if value >= 1:
        return "1"
    if 0 < value < 0.001:
        return f"{value:.3g}"
    return f"{value:.3f}".rstrip("0").rstrip(".")


def mfs_suggestion(current: float | None, target: float, cost: str, *, higher: bool = True) -> Suggestion:
    """A --mem-fraction-static change whose direction cannot be misread: the why starts with Raise or
    Lower (`higher` says which when the log does not show the value in use)."""
    target = round(target, 3)
    if current is not None:
        higher = target > current
    verb = RAISE_MFS if higher else LOWER_MFS
    if current is not None:
        start = f" from {fmt_mfs(current)} to"
    else:  # the value in use is not in the log: a bound, so the direction holds whatever it was
        start = " to at least" if higher else " to at most"
    text = f"{verb} --mem-fraction-static{start} {fmt_mfs(target)}"
    return Suggestion("--mem-fraction-static", fmt_mfs(target), f"{text}: {cost}")


def raise_cost(baseline: float | None, target: float) -> str:
    slack = f" ({baseline * (1 - target):.2f} GiB)" if baseline else ""
    return (
        "a larger share of each GPU for weights and the KV/Mamba pools, and less slack"
        f"{slack} for CUDA graphs and activations"
    )


LOWER_COST = "a smaller KV pool (fewer tokens cached), and more slack for CUDA graphs and activations"


def phase_words(phase: str) -> str:
    if phase == "starting":
        return "starting up"
    if phase == "distributed_init":
        return "setting up the GPUs' communication (distributed init)"
    return "serving requests" if phase == "ready" else PHASE_LABELS.get(phase, phase)


_SGTUI_FIT_OPTIONS = frozenset(
    {"--draft-weights-gib", "--weights-gib", "--free-gib", "--gpu", "--gpus", "--config"}
)


def as_number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _fit_mfs(current: float | None, value: float, code: str, note: str) -> Suggestion:
    higher = "lower" not in code if current is None else value > current
    cost = raise_cost(None, value) if higher else LOWER_COST
    return mfs_suggestion(current, value, cost + note, higher=higher)


def with_fit(ctx: Context, suggestions: list[Suggestion]) -> list[Suggestion]:
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
        value = as_number(warning.get("suggested_value")) if warning else None
        if value is not None and s.flag == "--mem-fraction-static":
            mine = as_number(s.value) if s.value else None
            if mine is None or value > mine:
                s = _fit_mfs(current, value, str(warning.get("code", "")), " (the fit engine's figure)")
        elif value is not None:
            s = Suggestion(s.flag, s.value, f"{s.why} The fit engine's limit: {value:g}.")
        merged.append(s)
    for flag, warning in advice.items():
        value = warning.get("suggested_value")
        number = as_number(value)
        message = str(warning.get("message", ""))
        if flag == "--mem-fraction-static" and number is not None:
            merged.append(_fit_mfs(current, number, str(warning.get("code", "")), ""))
        else:
            merged.append(Suggestion(flag, None if value is None or value is True else str(value), message))
    return merged
