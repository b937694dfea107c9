"""Following one run's startup: feeds core.logs' classifier and turns its state into the timeline view
and, on failure, core.logs.diagnose's explanations.

Elapsed times come from the log's own timestamps (not the wall clock), so a reattached run and a replayed
log show the same timeline as the live one.
"""

from __future__ import annotations

import time
from typing import Any

from sgtui.core.logs.state import PHASE_LABELS, StartupState
from sgtui.ui.views import DiagnosisView, Milestone, SuggestionView, TimelineView

SHOWN_MILESTONES = (
    ("load_weight_begin", "loading weights"),
    ("load_weight_end", "weights loaded"),
    ("mamba_cache_allocated", "Mamba cache"),
    ("kv_cache_allocated", "KV cache"),
    ("cuda_graph_end", "CUDA graphs"),
    ("ready", "ready"),
)
GIB_FACTS = (
    ("load_weight_begin_avail_gib", "free before load"),
    ("weight_mem_gib", "weights/GPU"),
    ("avail_mem_after_weights_gib", "free after load"),
    ("mamba_ssm_state_gib", "mamba ssm state"),
    ("cuda_graph_mem_gib", "CUDA graphs"),
    ("available_gpu_mem_gib", "free when ready"),
)
INT_FACTS = (
    ("mamba_cache_size", "mamba slots"),
    ("max_running_requests", "max running req"),
    ("context_length", "context"),
)
COMPARED = (
    ("KV tokens", "max_total_num_tokens", ("max_total_num_tokens", "kv_tokens"), "{:,}"),
    ("weights GiB", "weights_gib", ("weight_mem_gib",), "{:.2f}"),
    ("max running req", "max_running_requests", ("max_running_requests",), "{:,}"),
)


def _fmt(template: str, value: Any) -> str:
    try:
        return template.format(value)
    except (TypeError, ValueError):
        return str(value)


def _predicted(key: str, template: str, value: Any, report: dict[str, Any] | None) -> str:
    """A failing fit's token count is <= 0 (SGLang's formula before its check): say none, and by how much."""
    if key != "max_total_num_tokens" or not isinstance(value, int | float) or value > 0:
        return _fmt(template, value)
    short = (report or {}).get("kv_pool_gib")
    return f"none ({-short:.2f} GiB short)" if isinstance(short, int | float) and short < 0 else "none"


def timeline_from_state(state: StartupState, predicted: dict[str, Any] | None) -> TimelineView:
    stamps = [m.seconds for m in state.milestones.values() if m.seconds is not None]
    t0 = min(stamps) if stamps else None
    milestones: list[Milestone] = []
    for kind, label in SHOWN_MILESTONES:
        reached = state.milestones.get(kind)
        if kind == "mamba_cache_allocated" and reached is None and "mamba_cache_size" not in state.facts:
            continue
        at = (
            reached.seconds - t0
            if reached is not None and reached.seconds is not None and t0 is not None
            else None
        )
        milestones.append(Milestone(kind, label, at, reached is not None))
    facts: list[tuple[str, str]] = []
    for key, label in GIB_FACTS:
        value = state.facts.get(key)
        if isinstance(value, int | float):
            facts.append((label, f"{value:.2f} GiB"))
    k, v = state.facts.get("k_size_gib"), state.facts.get("v_size_gib")
    if isinstance(k, int | float) and isinstance(v, int | float):
        facts.append(("KV pool (K+V)", f"{k + v:.2f} GiB"))
    for key, label in INT_FACTS:
        value = state.facts.get(key)
        if isinstance(value, int):
            facts.append((label, f"{value:,}"))
    comparisons: list[tuple[str, str, str]] = []
    for label, pkey, akeys, template in COMPARED:
        actual = next((state.facts[a] for a in akeys if state.facts.get(a) is not None), None)
        expected = (predicted or {}).get(pkey)
        if actual is not None and expected is not None:
            shown = _predicted(pkey, template, expected, predicted)
            comparisons.append((label, shown, _fmt(template, actual)))
    error = state.error
    progress = state.current_progress or {}
    pct = progress.get("percent")
    phase = "failed" if error is not None else PHASE_LABELS.get(state.phase, state.phase)
    elapsed = state.last_seconds - t0 if state.last_seconds is not None and t0 is not None else None
    return TimelineView(
        phase=phase,
        elapsed_s=elapsed,
        progress_pct=int(pct) if isinstance(pct, int | float) else None,
        milestones=tuple(milestones),
        facts=tuple(facts),
        comparisons=tuple(comparisons),
        error=error.text.strip()[:300] if error is not None else None,
    )


def diagnosis_views(diagnoses: list[Any]) -> list[DiagnosisView]:
    return [
        DiagnosisView(
            d.title,
            d.detail,
            tuple(SuggestionView(s.flag, s.value, getattr(s, "why", "")) for s in d.suggestions),
        )
        for d in diagnoses
    ]


class StartupTracker:
    """One per followed run. `feed` returns True when the timeline changed enough to redraw."""

    def __init__(self, predicted: dict[str, Any] | None, start: float | None = None) -> None:
        from sgtui.core.logs import LogClassifier

        self.classifier = LogClassifier(clock=time.monotonic)  # as `launch --watch`: stalls watched live
        self.predicted = predicted
        self._last_key: tuple[Any, ...] = ()

    @property
    def state(self) -> StartupState:
        return self.classifier.state

    def feed(self, lines: list[str]) -> bool:
        if not lines:
            return False
        self.classifier.feed("\n".join(lines) + "\n")
        s = self.state
        # not the log's clock: a serving server's every line moves it, and each redraw costs a layout pass
        key = (s.phase, len(s.milestones), len(s.facts), len(s.signals), str(s.current_progress))
        changed = key != self._last_key
        self._last_key = key
        return changed

    def process_exited(self, returncode: int | None) -> None:
        """The run's process ended (rc None: unknown): the same rule `launch --watch` applies."""
        self.classifier.process_exited(returncode)

    def end_of_log(self) -> None:
        """The log is read to its end: the rule `sgtui explain` applies to a whole file."""
        self.classifier.finish()

    @property
    def outcome(self) -> str:
        """ready | failed | starting: the classifier's own verdict, as explain and launch --watch print it."""
        outcome = self.classifier.analysis().outcome
        return outcome if outcome in ("ready", "failed") else "starting"

    def milestone_kinds(self) -> list[str]:
        return [m.kind for m in self.state.milestone_list()]

    def timeline(self) -> TimelineView:
        return timeline_from_state(self.state, self.predicted)

    def diagnoses(self) -> list[DiagnosisView]:
        from sgtui.core.logs import diagnose

        try:
            return diagnosis_views(diagnose(self.classifier.analysis(), self.predicted))
        except Exception as exc:  # a diagnosis bug must not hide the failure itself
            err = self.state.error
            return [DiagnosisView(err.error_class if err else "failed", f"(no diagnosis: {exc})")]
