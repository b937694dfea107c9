"""Turning raw log lines into display lines: strip ANSI, resolve `\\r` progress bars."""

from __future__ import annotations

import re

from sgtui.core.logs.prefix import strip_controls

ANSI_RE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[@-Z\\-_]")


def strip_ansi(text: str) -> str:
    return ANSI_RE.sub("", text) if "\x1b" in text else text


def clean_line(line: str) -> str:
    """A line as a terminal would finally show it: colours removed, only the last `\\r` rewrite kept, and no
    control character left that a terminal would act on (C0 but tab, all of C1: see `strip_controls`)."""
    if line.isprintable():  # no escape, \r or other control: nothing below would change it (most lines)
        return line
    text = strip_ansi(line)
    if "\r" in text:
        parts = [p for p in text.split("\r") if p]
        text = parts[-1] if parts else ""
    return strip_controls(text)
