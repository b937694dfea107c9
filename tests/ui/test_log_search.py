"""The log search's one pass over the kept lines gives exactly what searching each line alone gives."""

from __future__ import annotations

import random
import re
import subprocess
import sys

import pytest

from sgtui.ui.widgets.log_search import SEARCH_SPAN, Search
from sgtui.ui.widgets.log_store import LineStore


def per_line(search: Search, lines: list[str]) -> list[int]:
    return [i for i, line in enumerate(lines) if search.matches(line)]


TRICKY = [
    "",
    "[2026-01-15 08:01:02 TP0] Decode batch. #running-req: 8, token usage: 0.41",
    "",
    "Traceback (most recent call last):",
    '  File "/opt/x/y.py", line 3, in <module>',
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "ERROR deadline a",
    "b deadline",
    "a",
    "b",
    "   ",
    "naïve Straße ΣΊΣΥΦΟΣ İstanbul",
    "x" * (SEARCH_SPAN - 3) + "needle at the span's edge",
    "y" * SEARCH_SPAN + "needle past the span",
    "[/opt/x is not a regex",
    "the last line ends with deadline",
]
QUERIES = [
    "deadline",
    "Deadline",
    "DEADLINE",
    "^$",
    "^",
    "$",
    "line$",
    "^b",
    "^ *$",
    r"a\s*b",  # runs from "a" into the next line's "b" when joined: not a match per line
    r"a\nb",
    r"\s",
    r"\S+$",
    r"(?s)a.b",
    r"[^x]b",
    r"deadline\b",
    r"\bb\b",
    r"(?<=ERROR )deadline",
    r"(?<!\S)deadline",
    r"deadline(?!\s)",
    r"\Aa\Z",
    r"x*",
    "needle",
    r"edge$",
    r"[!-\]]",
    r"\x41",
    r"(?-i:error)",
    "error",
    "straße",
    "σίσυφος",
    "istanbul",
    "[/opt/x",  # not a regex: the literal text
    "(unclosed",
    r"(\w)\1",
    "tp0] decode",
    "0\\.4",
]


ASCII = [line for line in TRICKY if line.isascii()]  # lowered for a case-insensitive search


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("lines", [TRICKY, ASCII], ids=["unicode", "ascii"])
def test_one_pass_matches_the_per_line_search(query: str, lines: list[str]) -> None:
    search = Search.parse(query)
    assert search is not None
    assert search.lines(lines) == per_line(search, lines)


def test_an_invalid_regex_is_searched_as_typed_in_one_pass() -> None:
    search = Search.parse("[/opt/x")
    assert search is not None and search.literal
    assert search.lines(TRICKY) == [14]


def test_smart_case_holds_in_one_pass() -> None:
    lower, upper = Search.parse("error"), Search.parse("ERROR")
    assert lower is not None and upper is not None
    assert lower.lines(TRICKY) == [5, 6]  # "OutOfMemoryError" and "ERROR"
    assert upper.lines(TRICKY) == [6]


def test_anchors_mean_each_line_s_start_and_end() -> None:
    lines = ["b a", "a b", "", "a"]
    assert Search.parse("^a").lines(lines) == [1, 3]  # type: ignore[union-attr]
    assert Search.parse("a$").lines(lines) == [0, 3]  # type: ignore[union-attr]
    assert Search.parse("^$").lines(lines) == [2]  # type: ignore[union-attr]


def test_a_match_on_the_last_line_and_none_at_all() -> None:
    lines = ["one", "two", "three"]
    assert Search.parse("ee").lines(lines) == [2]  # type: ignore[union-attr]
    assert Search.parse("four").lines(lines) == []  # type: ignore[union-attr]
    assert Search.parse("o").lines([]) == []  # type: ignore[union-attr]


def test_random_patterns_over_random_lines_agree_with_the_per_line_search() -> None:
    """Short alphabets make matches that run across line ends, empty lines and case clashes common."""
    rng = random.Random(9)
    atoms = ["a", "B", "b", " ", ".", r"\s", r"\S", r"\w", "x*", "^", "$", r"\b", "[ab]", "[^a]"]
    atoms += [r"[!-\]]", "(a|b)", "c+", r"\x41"]
    for _ in range(400):
        lines = ["".join(rng.choice("aAbB x\tc") for _ in range(rng.randint(0, 6))) for _ in range(12)]
        query = "".join(rng.choice(atoms) for _ in range(rng.randint(1, 4)))
        try:
            re.compile(query)
        except re.error:
            continue
        search = Search.parse(query)
        assert search is not None
        assert search.lines(lines) == per_line(search, lines), (query, lines)


# ---- a pattern that backtracks for minutes ----------------------------------------------------------------
SLOW = r"(.*a){40}x"  # on a line of 200 "a"s, Python's `re` would backtrack for longer than anyone waits
SLOW_LINES = ["a" * 200] * 3 + ["a line saying (.*a){40}x as text"]


def test_a_pattern_too_slow_for_the_lines_is_searched_as_its_text_and_says_so() -> None:
    """The search runs on the app's thread at each keystroke: it must end, whatever the user types. Run in
    a child process, so that an engine without a limit fails this test instead of hanging the suite."""
    code = (
        "from sgtui.ui.widgets.log_store import LineStore\n"
        f"store = LineStore(100)\nstore.append({SLOW_LINES!r})\n"
        f"search = store.set_search({SLOW!r})\n"
        "print(search.literal, search.slow, store.match_lines)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split(None, 2) == ["True", "True", "[3]\n"], done.stderr


def test_a_batch_too_slow_for_the_pattern_turns_the_whole_search_literal() -> None:
    """Lines that matched the pattern before the switch are asked again as text: the count stays true."""
    store = LineStore(100)
    store.append(["xa", "a line with (.*a){40}x in it"])
    store.set_search(SLOW)
    assert store.search is not None and not store.search.literal and store.match_lines == []
    store.append(["a" * 200, "(.*a){40}x again"])
    assert store.search.literal and store.search.slow
    assert store.match_lines == [1, 3]


def test_a_switch_to_literal_during_an_append_redraws_the_wrapped_view_whole() -> None:
    """The wrapped rows described the pattern's view; left so, a row pointed past the view's lines."""
    store = LineStore(100)
    store.set_wrap(10)
    store.append(["a" * 40 + "x", "a" * 41 + "x"])
    store.set_search(SLOW)
    assert store.view_count == 2 and store.row_count == 10
    store.append(["a" * 200])
    assert store.search is not None and store.search.slow and store.search_changed
    assert store.view_count == 0 and store.row_count == 0
    store.append(["(.*a){40}x " + "b" * 20])
    assert store.view_count == 1 and store.row_count == 4
    assert store.view_line_number(store.row(3)[0]) == 3  # type: ignore[index]


@pytest.mark.parametrize("text", [r"(?r)foo", r"\Gfoo", r"x\p{lu}", r"x[[:upper:]]"])
def test_what_only_the_regex_engine_knows_still_agrees_with_the_per_line_search(text: str) -> None:
    """Reverse search, \\G, Unicode properties and POSIX classes cannot be joined or folded as re's
    syntax can: they keep the per-line search, whose answer is the definition."""
    lines = ["foo", "bar", "xfoo", "foo bar", "fox", "xA", "xa"]
    search = Search.parse(text)
    assert search is not None and search.lines(lines) == per_line(search, lines)


def test_a_pattern_nested_too_deep_to_compile_is_searched_as_text() -> None:
    search = Search.parse("(" * 600 + "a" + ")" * 600)
    assert search is not None and search.literal


def test_a_line_too_slow_to_highlight_is_shown_without_highlights() -> None:
    search = Search.parse(SLOW)
    assert search is not None and search.spans("a" * 200) == []
