"""The log view's search: a regex, or the literal text when it is not one; smart case (case-insensitive
unless the text has an upper-case letter). Only the first SEARCH_SPAN characters of a line are searched.

`Search.lines(texts)` says which lines match. It gives exactly what `matches` per line gives, but in one
regex pass over the lines joined with "\\n" where that is the same thing (a pass in C instead of a Python
call per line: 20,000 kept lines answer within a frame):

- the joined pattern is compiled with MULTILINE, so `^` and `$` still mean a line's start and end;
- a match that runs into the next line (`\\s`, `[^x]`, `.` under `(?s)` match "\\n") is checked on its own
  line alone, and the pass goes on from the next line;
- what could see past a line's ends (lookarounds, `\\A`, `\\Z`) keeps the per-line loop (a leading `^`
  does not: the `regex` engine finds MULTILINE line starts at once, where `re` tried every column);
- a case-insensitive search of ASCII text runs case-sensitively over the lowered text when the pattern
  starts with a letter and cannot tell the difference (no character class, escape by code or inline flag:
  see `_foldable`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass

import regex

SEARCH_SPAN = 4_000  # regex work per line is capped: a 1 MB line costs what a 4 k one does
# A pattern is the user's: `(a*)*b` backtracks for minutes on one line, and a search runs on the app's
# thread at every keystroke. The `regex` engine (re's syntax, timeouts) stops it: past SEARCH_BUDGET_S for
# the kept lines `lines` raises SearchTooSlow (the store then searches the literal text); past
# SPAN_BUDGET_S a line's highlight is left out.
SEARCH_BUDGET_S = 0.5
SPAN_BUDGET_S = 0.05


class SearchTooSlow(Exception):
    """The pattern took longer than SEARCH_BUDGET_S over the lines (catastrophic backtracking)."""


# can look past a line's start or end, or depend on where a search starts (regex's \G, reverse search)
_CONTEXT = ("(?=", "(?!", "(?<", "\\A", "\\Z", "\\z", "\\G")
_CODE_ESCAPE = re.compile(r"\\[xuUN0-9pP]")  # \x41, \u0041, \N{...}, octal, \p{Lu}: letters by code or class


def _joinable(text: str, literal: bool) -> bool:
    if literal:
        return True
    return not any(bit in text for bit in _CONTEXT)


def _foldable(text: str, literal: bool, flags: int) -> bool:
    """A case-insensitive pattern that matches ASCII text exactly as its case-sensitive self matches the
    lowered text: ASCII, and nothing whose case sense differs from a literal letter's (a class like
    `[!-\\]]` holds upper-case letters only, `\\x41` is "A", `(?-i:...)` turns the flag off)."""
    if not flags & regex.IGNORECASE or not text.isascii():
        return False
    if literal:
        return True
    return "[" not in text and "(?" not in text and _CODE_ESCAPE.search(text) is None


@dataclass(frozen=True)
class Search:
    """A compiled search: a regex when the text is one, else the literal text; smart case."""

    text: str
    pattern: regex.Pattern[str]
    literal: bool
    joined: regex.Pattern[str] | None = None  # for one pass over lines joined with "\n"; None: per line
    folded: regex.Pattern[str] | None = None  # case-sensitive, for the lowered joined text (ASCII only)
    slow: bool = False  # searched as literal text because the pattern was too slow

    @classmethod
    def parse(cls, text: str, *, literal: bool = False) -> Search | None:
        """`literal`: the text as it is, not as a pattern (after SearchTooSlow)."""
        if not text:
            return None
        flags = 0 if any(c.isupper() for c in text) else regex.IGNORECASE
        try:
            if literal:
                raise regex.error("asked for the literal text")
            pattern = regex.compile(text, flags)
        except (regex.error, RecursionError):  # not a pattern, or nested past the compiler's depth
            pattern, literal = regex.compile(regex.escape(text), flags), True
        source = pattern.pattern
        joined = folded = None
        if _joinable(text, literal) and not pattern.flags & regex.REVERSE:
            joined = regex.compile(source, flags | regex.MULTILINE)
            if text[:1].isalpha() and _foldable(text, literal, flags):
                # a leading letter keeps the engine from its fast literal-prefix scan under IGNORECASE;
                # a leading "[" or digit does not, and lowering the whole text would then cost more
                folded = regex.compile(source, (flags & ~regex.IGNORECASE) | regex.MULTILINE)
        return cls(text, pattern, literal, joined, folded)

    def matches(self, line: str, timeout: float | None = SEARCH_BUDGET_S) -> bool:
        """Raises SearchTooSlow past `timeout` seconds."""
        try:
            return self.pattern.search(line, 0, SEARCH_SPAN, timeout=timeout) is not None
        except TimeoutError:
            raise SearchTooSlow(self.text) from None

    def spans(self, line: str) -> list[tuple[int, int]]:
        """The matches to highlight in one line; none when finding them takes past SPAN_BUDGET_S."""
        try:
            found = list(self.pattern.finditer(line, 0, SEARCH_SPAN, timeout=SPAN_BUDGET_S))
        except TimeoutError:
            return []
        return [(m.start(), m.end()) for m in found if m.end() > m.start()]

    def lines(self, texts: Sequence[str]) -> list[int]:
        """The indices of the matching lines, ascending: `[i for i, t in enumerate(texts) if matches(t)]`.
        Raises SearchTooSlow past SEARCH_BUDGET_S in all."""
        deadline = None if self.literal else time.monotonic() + SEARCH_BUDGET_S  # text cannot backtrack
        if self.joined is None or len(texts) < 2:
            found = []
            for i, line in enumerate(texts):
                if self.matches(line, _left(deadline, self.text)):
                    found.append(i)
            return found
        span = SEARCH_SPAN
        if max(map(len, texts)) <= span:
            text = "\n".join(texts)
        else:
            text = "\n".join(t if len(t) <= span else t[:span] for t in texts)
        pattern = self.joined
        if self.folded is not None and text.isascii():
            text, pattern = text.lower(), self.folded  # ASCII: same length, same "\n"s
        return self._one_pass(pattern, text, texts, deadline)

    def _one_pass(
        self, pattern: regex.Pattern[str], text: str, texts: Sequence[str], deadline: float | None
    ) -> list[int]:
        found: list[int] = []
        search, count, find = pattern.search, text.count, text.find
        pos = line = 0
        while True:
            try:
                m = search(text, pos, timeout=_left(deadline, self.text))
            except TimeoutError:
                raise SearchTooSlow(self.text) from None
            if m is None:
                return found
            start = m.start()
            line += count("\n", pos, start)
            end = find("\n", start)
            ran_on = end >= 0 and m.end() > end
            if not ran_on or self.matches(texts[line], _left(deadline, self.text)):  # its line alone
                found.append(line)
            if end < 0:
                return found
            pos, line = end + 1, line + 1


def _left(deadline: float | None, text: str) -> float | None:
    if deadline is None:
        return None
    left = deadline - time.monotonic()
    if left <= 0:
        raise SearchTooSlow(text)
    return left
