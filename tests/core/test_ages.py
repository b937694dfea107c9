"""Ages for people: a fleet row's short form and a sentence's rounder words, cut the same way."""

from __future__ import annotations

import pytest

from sgtui.core.ages import age_text, age_words


@pytest.mark.parametrize(
    ("seconds", "short", "words"),
    [
        (None, "", "an unknown time"),
        (-3, "0s", "0 s"),  # a clock step backwards never shows a negative age
        (59.9, "59s", "59 s"),
        (61, "1m01s", "61 s"),
        (125, "2m05s", "2 min"),
        (3661, "1h01m", "61 min"),
        (7300, "2h01m", "2 h 1 min"),
    ],
)
def test_an_age_reads_short_in_a_row_and_in_words_in_a_sentence(
    seconds: float | None, short: str, words: str
) -> None:
    assert (age_text(seconds), age_words(seconds)) == (short, words)
