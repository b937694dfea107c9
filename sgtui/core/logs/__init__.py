"""Log intelligence: what an SGLang log says about a launch, and what to do about it.

One analysis path for the TUI, `sgtui explain` and `sgtui launch --watch` (see classifier.py):
`LogClassifier(clock=...)` -> `feed(chunk)` -> `process_exited(rc)` -> `finish()` -> `check_stall(now)` ->
`analysis()` -> `diagnose(analysis, fit)`.

Modules: prefix (line hygiene and every prefix era), rules (milestone and number parsers), server_args (the
launch's settings), failures (error lines and fatal signals), traceback (frames -> phase, the line that ends a
traceback), facts (which statement of a number wins; minimum over ranks), ranks, state (phases, milestones,
`StartupState`), rootcause, stall, milestones / info / traffic (line handlers), phases (`PhaseLog`: what
they found that moves the startup on), signals (`FailureLog`: what went wrong), classifier, analysis
(verdict, bounded whole-file reading), diagnosis/ (per error class).
"""

from sgtui.core.logs.analysis import LogAnalysis, classify_file, classify_text
from sgtui.core.logs.classifier import LogClassifier
from sgtui.core.logs.diagnosis import Diagnosis, Suggestion, diagnose, mfs_suggestion, nearest_flags
from sgtui.core.logs.state import (
    ERROR_CLASSES,
    MILESTONE_KINDS,
    PHASE_LABELS,
    PHASES,
    ErrorInfo,
    LogEvent,
    Milestone,
    StartupState,
)

__all__ = [
    "ERROR_CLASSES",
    "MILESTONE_KINDS",
    "PHASES",
    "PHASE_LABELS",
    "Diagnosis",
    "ErrorInfo",
    "LogAnalysis",
    "LogClassifier",
    "LogEvent",
    "Milestone",
    "StartupState",
    "Suggestion",
    "classify_file",
    "classify_text",
    "diagnose",
    "mfs_suggestion",
    "nearest_flags",
]
