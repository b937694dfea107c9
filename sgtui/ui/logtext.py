"""Turning raw log lines into display lines: strip ANSI, resolve `\\r` progress bars."""

from __future__ import annotations

import re

ANSI_RE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[@-Z\\-_]")


def strip_ansi(text: str) -> str:
    return ANSI_RE.sub("", text) if "\x1b" in text else text


def clean_line(line: str) -> str:
    """A line as a terminal would finally show it: colours removed, only the last `\\r` rewrite kept."""
    text = strip_ansi(line)
    if "\r" in text:
        parts = [p for p in text.split("\r") if p]
        text = parts[-1] if parts else ""
    return text
