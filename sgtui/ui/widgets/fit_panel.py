"""The memory-fit panel beside the launch form: renders a `FitReport.to_json()` dict.

It takes the dict rather than the report object so that the panel can be drawn from `sgtui fit --json`
output, a fake in tests, or the real engine alike. It is about 30 columns wide at 80x24, so every row is
a short label, a right-aligned number and, under budget steps, one dim line saying what made them large.
"""

from __future__ import annotations

import textwrap
from typing import Any

from rich.text import Text
from textual.widgets import Static

VERDICT_STYLE = {"fits": "bold green", "tight": "bold yellow", "fails": "bold red"}
LABEL_WIDTH = 14
# budget keys -> (sign, short label): the engine's labels are sized for the CLI's wider table
BUDGET_LABELS = {
    "static_budget": ("", "static budget"),
    "speculative_state": ("-", "spec state"),
    "mamba_state": ("-", "Mamba state"),
    "kv_pool": ("=", "KV pool"),
}
# the budget counts spell their units out ("48 requests x 4 draft tokens"); the panel has no room
COUNT_ABBREVIATIONS = ((" requests", " req"), (" draft tokens", " draft"), ("sliding-window", "SWA"))


def _gib(value: Any) -> str:
    return f"{value:6.2f} GiB" if isinstance(value, int | float) else "?"


def _int(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else ("?" if value is None else str(value))


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def fit_text(report: dict[str, Any] | None, error: str = "", width: int = 0) -> Text:
    """`width`, when known, lets indented notes wrap under their own indent instead of column 0."""
    text = _PanelText()
    text.panel_width = width
    text.append("Memory fit", style="bold")
    if error:
        text.append("\n")
        text.append(error, style="red")
        return text
    if report is None:
        text.append("\n")
        text.append("waiting for the model's config and the GPU size", style="dim")
        return text
    verdict = str(report.get("verdict", "?"))
    text.append("  ")
    text.append(verdict.upper(), style=VERDICT_STYLE.get(verdict, "bold"))
    version = report.get("sglang_version")
    if version:
        text.append(f"  {version}", style="dim")
    _row(text, "GPU total", _gib(report.get("gpu_total_gib")))
    _row(text, "free at start", _gib(report.get("baseline_free_gib")))
    if report.get("free_now"):  # the TUI's fit from the GPUs as nvidia-smi reads them now
        _note(text, str(report["free_now"]))
    _fraction_rows(text, report)
    _row(text, "weights/GPU", _gib(report.get("weights_gib")))
    if report.get("draft_weights_gib"):
        _row(text, "draft weights", _gib(report.get("draft_weights_gib")))
    budget = [b for b in report.get("budget") or [] if isinstance(b, dict)]
    if budget:
        _budget_rows(text, budget, report)
    else:
        _pool_rows(text, report)
    if not report.get("error") or _tokens(report) > 0:
        swa = report.get("swa")
        if isinstance(swa, dict):
            _row(text, "SWA tokens", f"{_int(swa.get('swa_tokens'))} (full {_int(swa.get('full_tokens'))})")
        _row(text, "max running", f"{_int(report.get('max_running_requests')):>6}")
        _row(text, "context", f"{_int(report.get('context_length')):>6}")
        _row(text, "graph slack", _gib(report.get("slack_gib")))
    if report.get("error"):
        text.append("\n\n")
        text.append(str(report["error"]), style="bold red")
    _warning_rows(text, report.get("warnings") or [])
    return text


class _PanelText(Text):
    panel_width: int = 0


def _row(text: Text, label: str, value: str, style: str = "", label_style: str = "dim") -> None:
    text.append(f"\n{label:<{LABEL_WIDTH}}", style=label_style)
    text.append(value, style=style)


def _note(text: Text, note: str, style: str = "dim") -> None:
    """A line under a row, indented; wrapped lines keep the indent when the panel's width is known."""
    width = getattr(text, "panel_width", 0)
    lines = textwrap.wrap(note, max(width - 2, 12), break_on_hyphens=False) if width else [note]
    for line in lines or [""]:
        text.append("\n  ")
        text.append(line, style=style)


def _fraction_rows(text: Text, report: dict[str, Any]) -> None:
    value = _num(report.get("mem_fraction_static"))
    if value is None:
        _row(text, "mem-fraction", "?")
        return
    auto = _num(report.get("mem_fraction_static_auto"))
    if report.get("mem_fraction_static_is_auto"):
        _row(text, "mem-fraction", f"{value:6.3f} (auto)")
        return
    _row(text, "mem-fraction", f"{value:6.3f}")
    if auto is not None:
        _note(text, f"auto would be {auto:.3f}")


def _tokens(report: dict[str, Any]) -> int:
    tokens = report.get("max_total_num_tokens")
    return tokens if isinstance(tokens, int) else 0


def _short_count(count: str) -> str:
    for long, short in COUNT_ABBREVIATIONS:
        count = count.replace(long, short)
    return count


def _budget_rows(text: Text, budget: list[dict[str, Any]], report: dict[str, Any]) -> None:
    """The static budget, what each pool took from it (with its share), and what was left for KV.

    On a failing fit the biggest bite is highlighted: that is what to shrink."""
    total = next((_num(b.get("gib")) for b in budget if b.get("key") == "static_budget"), None)
    bites = [b for b in budget if b.get("key") not in ("static_budget", "kv_pool")]
    worst = min(bites, key=lambda b: _num(b.get("gib")) or 0.0, default=None)
    if worst is not None and (_num(worst.get("gib")) or 0.0) >= 0:
        worst = None
    failing = report.get("verdict") == "fails"
    for line in budget:
        key = str(line.get("key", ""))
        gib = _num(line.get("gib"))
        sign, label = BUDGET_LABELS.get(key, ("-", str(line.get("item", key))))
        label = f"{sign} {label}" if sign else label
        if key == "kv_pool":
            _kv_rows(text, label, gib, line, report)
            continue
        shown = gib if gib is None or key == "static_budget" else -gib
        value = _gib(shown)
        if key != "static_budget" and total and total > 0 and shown is not None and shown > 0:
            value += f" {shown / total:4.0%}"
        hot = failing and line is worst
        _row(text, label, value, "bold red" if hot else "", "bold red" if hot else "dim")
        if line.get("count"):
            _note(text, _short_count(str(line["count"])))


def _kv_rows(text: Text, label: str, gib: float | None, line: dict[str, Any], report: dict[str, Any]) -> None:
    """Tokens when the pool holds any; otherwise how much it is short, never a negative token count."""
    value = _gib(gib)
    tokens = _tokens(report)
    if tokens > 0:
        _row(text, label, value)
        _note(text, _short_count(str(line.get("count") or f"{tokens:,} tokens")))
        return
    _row(text, label, value, "bold red")
    if gib is not None and gib < 0:
        _note(text, f"{-gib:.2f} GiB short: no tokens", "red")
    else:
        _note(text, "too small for one token", "red")


def _pool_rows(text: Text, report: dict[str, Any]) -> None:
    """Reports without budget lines (older `sgtui fit --json`): the pools as plain rows."""
    _row(text, "KV+state", _gib(report.get("rest_gib")))
    mamba = report.get("mamba")
    if isinstance(mamba, dict):
        slots = _int(mamba.get("max_mamba_cache_size"))
        _row(text, "Mamba state", f"{_gib(mamba.get('state_gib'))} × {slots}")
        if mamba.get("spec_state_gib"):
            _row(text, "spec state", _gib(mamba.get("spec_state_gib")))
    tokens = _tokens(report)
    if tokens > 0:
        _row(text, "KV tokens", f"{tokens:,}")
        return
    short = _num(report.get("kv_pool_gib"))
    if short is not None and short < 0:  # else SGLang stopped before it sized the KV pool
        _row(text, "KV tokens", f"none: {-short:.2f} GiB short", "bold red")


# What an estimate `sgtui fit` lets its user replace by hand means here, where no such field exists
FIT_INPUTS = {
    "--free-gib": "free at start is estimated: the GPU total less the baseline table's figure for this card "
    'and TP, less what is in use now; a launch\'s "Load weight begin. avail mem=" gives the exact figure',
    "--weights-gib": "weights/GPU are estimated from the config's shapes: the checkpoint's safetensors were "
    "not read on the target",
    "--draft-weights-gib": "draft weights are estimated from the draft model's config",
}


def _warning_rows(text: Text, warnings: list[dict[str, Any]]) -> None:
    if warnings:
        text.append("\n")
    for w in warnings:
        text.append("\n⚠ ", style="yellow")
        flag = w.get("flag")
        if flag in FIT_INPUTS:  # `sgtui fit`'s own inputs: the app has no such field, it reads the target
            text.append(FIT_INPUTS[flag])
            continue
        if flag:
            text.append(f"{flag}: ", style="bold")
        text.append(str(w.get("message", "")))
        if w.get("suggested_value") is not None and flag:
            text.append(f" → {flag} {w['suggested_value']}", style="cyan")


def fit_badge(report: dict[str, Any] | None, error: str = "") -> Text:
    """The fit's verdict in a few cells, for the status line on every tab."""
    if error.startswith(FIX_FLAGS_FIRST):
        return Text("fix the flags first", style="bold red")
    if report is None:
        return Text("?", style="dim")
    verdict = str(report.get("verdict", "?"))
    return Text(verdict.upper(), style=VERDICT_STYLE.get(verdict, "bold"))


FIX_FLAGS_FIRST = "fix the flags first"


class FitPanel(Static):
    DEFAULT_CSS = """
    FitPanel { height: auto; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(fit_text(None), **kwargs)  # type: ignore[arg-type]
        self.report: dict[str, Any] | None = None
        self.error = ""
        self._drawn_width = 0

    def show(self, report: dict[str, Any] | None, error: str = "") -> None:
        self.report, self.error = report, error
        self._drawn_width = self.content_size.width
        self.update(fit_text(report, error, self._drawn_width))

    def on_resize(self) -> None:
        """Re-wrap for the new width (a scrollbar appearing takes two columns)."""
        if self.content_size.width != self._drawn_width:
            self._drawn_width = self.content_size.width
            self.update(fit_text(self.report, self.error, self._drawn_width))
