"""How long ago, for people: one way to cut seconds into hours, minutes and seconds, in two styles.

`age_text` is the fleet row's and the status line's ("3s", "2m05s", "1h02m"); `age_words` the stop
question's ("45 s", "3 min", "1 h 2 min"), rounder because it is read in a sentence.
"""

from __future__ import annotations

# (below this many seconds, the format); the last step has no limit
_SHORT = ((60, "{s}s"), (3600, "{m}m{ss:02d}s"), (None, "{h}h{mm:02d}m"))
_WORDS = ((120, "{s} s"), (7200, "{m} min"), (None, "{h} h {mm} min"))


def _cut(seconds: float, steps: tuple[tuple[int | None, str], ...]) -> str:
    s = max(0, int(seconds))
    parts = {"s": s, "ss": s % 60, "m": s // 60, "h": s // 3600, "mm": s % 3600 // 60}
    for limit, form in steps:
        if limit is None or s < limit:
            return form.format(**parts)
    raise AssertionError("the last step has no limit")


def age_text(seconds: float | None) -> str:
    """'3s', '2m05s', '1h02m': short enough for a fleet row; "" when unknown."""
    return "" if seconds is None else _cut(seconds, _SHORT)


def age_words(seconds: float | None) -> str:
    """'45 s', '3 min', '1 h 2 min' for a sentence; "an unknown time" when unknown."""
    return "an unknown time" if seconds is None else _cut(seconds, _WORDS)
