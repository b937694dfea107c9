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
