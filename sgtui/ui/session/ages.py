"""When each live value was last confirmed, so views can show its age and mark it stale."""

from __future__ import annotations

import time
from collections.abc import Callable

from sgtui.core.ages import age_text

__all__ = ["STALE_AFTER_S", "Ages", "age_text"]  # age_text: how the views print an age (core/ages.py)

STALE_AFTER_S = 15.0  # a few missed samples or polls: the value is shown, marked "last seen N s ago"


class Ages:
    """Last-seen stamps by name ("state", "gpus", "log", ...) on one monotonic clock."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._seen: dict[str, float] = {}

    def touch(self, name: str, at: float | None = None) -> None:
        self._seen[name] = self.clock() if at is None else at

    def seen(self, name: str) -> float | None:
        return self._seen.get(name)

    def age(self, name: str, now: float | None = None) -> float | None:
        at = self._seen.get(name)
        if at is None:
            return None
        return (self.clock() if now is None else now) - at

    def is_stale(self, name: str, after: float = STALE_AFTER_S, now: float | None = None) -> bool:
        age = self.age(name, now)
        return age is not None and age > after
