"""The log view's search: a regex, or the literal text when it is not one; smart case (case-insensitive
unless the text has an upper-case letter). Only the first SEARCH_SPAN characters of a line are searched.

`Search.lines(texts)` says which lines match. It gives exactly what `matches` per line gives, but in one
regex pass over the lines joined with "\\n" where that is the same thing (a pass in C instead of a Python
call per line: 20,000 kept lines answer within a frame):

- the joined pattern is compiled with re.MULTILINE, so `^` and `$` still mean a line's start and end;
- a match that runs into the next line (`\\s`, `[^x]`, `.` under `(?s)` match "\\n") is checked on its own
  line alone, and the pass goes on from the next line;
- what could see past a line's ends (lookarounds, `\\A`, `\\Z`) keeps the per-line loop, and so does a
  pattern anchored with a leading `^` (per line it fails at once; joined, the engine tries every column);
- a case-insensitive search of ASCII text runs case-sensitively over the lowered text when the pattern
  starts with a letter and cannot tell the difference (no character class, escape by code or inline flag:
  see `_foldable`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

SEARCH_SPAN = 4_000  # regex work per line is capped: a 1 MB line costs what a 4 k one does

_CONTEXT = ("(?=", "(?!", "(?<", "\\A", "\\Z", "\\z")  # can look past a line's start or end
_CODE_ESCAPE = re.compile(r"\\[xuUN0-9]")  # \x41, \u0041, \N{...}, octal: letters by code


def _joinable(text: str, literal: bool) -> bool:
    if literal:
        return True
    return not text.startswith("^") and not any(bit in text for bit in _CONTEXT)


def _foldable(text: str, literal: bool, flags: int) -> bool:
    """A case-insensitive pattern that matches ASCII text exactly as its case-sensitive self matches the
    lowered text: ASCII, and nothing whose case sense differs from a literal letter's (a class like
    `[!-\\]]` holds upper-case letters only, `\\x41` is "A", `(?-i:...)` turns the flag off)."""
    if not flags & re.IGNORECASE or not text.isascii():
        return False
    if literal:
        return True
    return "[" not in text and "(?" not in text and _CODE_ESCAPE.search(text) is None


@dataclass(frozen=True)
class Search:
    """A compiled search: a regex when the text is one, else the literal text; smart case."""

    text: str
    pattern: re.Pattern[str]
    literal: bool
    joined: re.Pattern[str] | None = None  # for one pass over lines joined with "\n"; None: per line
    folded: re.Pattern[str] | None = None  # case-sensitive, for the lowered joined text (ASCII only)

    @classmethod
    def parse(cls, text: str) -> Search | None:
        if not text:
            return None
        flags = 0 if any(c.isupper() for c in text) else re.IGNORECASE
        try:
            pattern, literal = re.compile(text, flags), False
        except re.error:
            pattern, literal = re.compile(re.escape(text), flags), True
        source = pattern.pattern
        joined = folded = None
        if _joinable(text, literal):
            joined = re.compile(source, flags | re.MULTILINE)
            if text[:1].isalpha() and _foldable(text, literal, flags):
                # a leading letter keeps sre from its fast literal-prefix scan under IGNORECASE; a leading
                # "[" or digit does not, and lowering the whole text would then cost more than it saves
                folded = re.compile(source, (flags & ~re.IGNORECASE) | re.MULTILINE)
        return cls(text, pattern, literal, joined, folded)

    def matches(self, line: str) -> bool:
        return self.pattern.search(line, 0, SEARCH_SPAN) is not None

    def spans(self, line: str) -> list[tuple[int, int]]:
        found = self.pattern.finditer(line, 0, SEARCH_SPAN)
        return [(m.start(), m.end()) for m in found if m.end() > m.start()]

    def lines(self, texts: Sequence[str]) -> list[int]:
        """The indices of the matching lines, ascending: `[i for i, t in enumerate(texts) if matches(t)]`."""
        if self.joined is None or len(texts) < 2:
            matches = self.matches
            return [i for i, line in enumerate(texts) if matches(line)]
        span = SEARCH_SPAN
        if max(map(len, texts)) <= span:
            text = "\n".join(texts)
        else:
            text = "\n".join(t if len(t) <= span else t[:span] for t in texts)
        pattern = self.joined
        if self.folded is not None and text.isascii():
            text, pattern = text.lower(), self.folded  # ASCII: same length, same "\n"s
        return self._one_pass(pattern, text, texts)

    def _one_pass(self, pattern: re.Pattern[str], text: str, texts: Sequence[str]) -> list[int]:
        found: list[int] = []
        search, count, find = pattern.search, text.count, text.find
        pos = line = 0
        while True:
            m = search(text, pos)
            if m is None:
                return found
            start = m.start()
            line += count("\n", pos, start)
            end = find("\n", start)
            if end < 0 or m.end() <= end or self.matches(texts[line]):  # a match ran on: its line alone
                found.append(line)
            if end < 0:
                return found
            pos, line = end + 1, line + 1
