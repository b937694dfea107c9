"""The memory-fit panel beside the launch form: renders a `FitReport.to_json()` dict.

It takes the dict rather than the report object so that the panel can be drawn from `sgtui fit --json`
output, a fake in tests, or the real engine alike.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Static

VERDICT_STYLE = {"fits": "bold green", "tight": "bold yellow", "fails": "bold red"}


def _gib(value: Any) -> str:
    return f"{value:.2f} GiB" if isinstance(value, int | float) else "?"


def _int(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else ("?" if value is None else str(value))


def fit_text(report: dict[str, Any] | None, error: str = "") -> Text:
    text = Text()
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
        text.append(f"  SGLang {version}", style="dim")
    rows: list[tuple[str, str]] = [
        ("GPU total", _gib(report.get("gpu_total_gib"))),
        ("free at start", _gib(report.get("baseline_free_gib"))),
        ("mem-fraction", _frac(report)),
        ("weights/GPU", _gib(report.get("weights_gib"))),
    ]
    if report.get("draft_weights_gib"):
        rows.append(("draft weights", _gib(report.get("draft_weights_gib"))))
    rows.append(("KV+state budget", _gib(report.get("rest_gib"))))
    mamba = report.get("mamba")
    if isinstance(mamba, dict):
        rows.append(
            ("mamba state", f"{_gib(mamba.get('state_gib'))} × {_int(mamba.get('max_mamba_cache_size'))}")
        )
        if mamba.get("spec_state_gib"):
            rows.append(("spec state", _gib(mamba.get("spec_state_gib"))))
    swa = report.get("swa")
    if isinstance(swa, dict):
        rows.append(("swa tokens", f"{_int(swa.get('swa_tokens'))} (full {_int(swa.get('full_tokens'))})"))
    rows += [
        ("KV tokens", _int(report.get("max_total_num_tokens"))),
        ("max running req", _int(report.get("max_running_requests"))),
        ("context", _int(report.get("context_length"))),
        ("slack (graphs)", _gib(report.get("slack_gib"))),
    ]
    for label, value in rows:
        text.append(f"\n{label:<16}", style="dim")
        text.append(value)
    if report.get("error"):
        text.append("\n\n")
        text.append(str(report["error"]), style="bold red")
    warnings = report.get("warnings") or []
    if warnings:
        text.append("\n")
    for w in warnings:
        text.append("\n⚠ ", style="yellow")
        flag = w.get("flag")
        if flag:
            text.append(f"{flag}: ", style="bold")
        text.append(str(w.get("message", "")))
        if w.get("suggested_value") is not None and flag:
            text.append(f" → {flag} {w['suggested_value']}", style="cyan")
    return text


def _frac(report: dict[str, Any]) -> str:
    value = report.get("mem_fraction_static")
    if not isinstance(value, int | float):
        return "?"
    auto = report.get("mem_fraction_static_auto")
    if report.get("mem_fraction_static_is_auto"):
        return f"{value:.3f} (SGLang's auto)"
    return f"{value:.3f} (auto would be {auto:.3f})" if isinstance(auto, int | float) else f"{value:.3f}"


class FitPanel(Static):
    DEFAULT_CSS = """
    FitPanel { height: auto; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(fit_text(None), **kwargs)  # type: ignore[arg-type]
        self.report: dict[str, Any] | None = None

    def show(self, report: dict[str, Any] | None, error: str = "") -> None:
        self.report = report
        self.update(fit_text(report, error))
