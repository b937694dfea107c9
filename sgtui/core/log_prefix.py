"""Line hygiene and prefixes: ANSI colours, tqdm `\\r` rewrites, SGLang's `[date time TPn]` prefix and
cloud-logging exports (`SEVERITY 2025-04-05T00:01:19.2Z <line>`).

Everything here is bounded: callers cap a line before it reaches a regex.
"""

from __future__ import annotations

import re

# What a regex ever sees of one line; server_args dumps get more (they are long and parsed with str.find).
LINE_CAP = 4096
SERVER_ARGS_CAP = 65536

_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")

# [2026-01-02 10:11:12.345 DP0 TP1] / [10:11:12 TP0] / [gpu=0] / [2025-03-08 12:29:04]
_SGLANG_PREFIX = re.compile(
    r"\[(?:(\d{4}-\d\d-\d\d) )?(\d\d:\d\d:\d\d(?:[.,]\d+)?)?"
    r"((?: ?(?:(?:DP|PP|TP|EP|CP|ATTN_CP|ATTN_DP|MOE_DP|MOE_EP)\d+|gpu(?:_id)?=\d+))*)\] ?"
)
_CLOUD_SEVERITIES = (
    "DEFAULT ",
    "DEBUG ",
    "INFO ",
    "NOTICE ",
    "WARNING ",
    "ERROR ",
    "CRITICAL ",
    "ALERT ",
    "EMERGENCY ",
)
_CLOUD_PREFIX = re.compile(r"([A-Z]+) (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?) ")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text) if "\x1b" in text else text


def last_segment(text: str) -> str:
    """The text a terminal would show for a line rewritten with `\\r` (tqdm): its last non-empty segment."""
    if "\r" not in text:
        return text
    for segment in reversed(text.split("\r")):
        if segment.strip():
            return segment
    return ""


def cloud_prefix(line: str) -> tuple[str, str] | None:
    """(timestamp, rest) for a cloud-logging export line (`ERROR 2025-04-05T00:01:19.5Z ...`), else None."""
    if not line.startswith(_CLOUD_SEVERITIES):
        return None
    m = _CLOUD_PREFIX.match(line)
    if m is None:
        return None
    return m.group(2), line[m.end() :]


def split_prefix(line: str) -> tuple[str | None, tuple[str, ...], str]:
    """(time as printed, ranks, body) of one line; a line without an SGLang prefix is all body."""
    if not line.startswith("["):
        return None, (), line
    m = _SGLANG_PREFIX.match(line)
    if m is None or (m.group(2) is None and not m.group(3)):
        return None, (), line
    date, clock, ranks = m.groups()
    time = f"{date} {clock}" if date and clock else clock
    return time, tuple(ranks.split()) if ranks else (), line[m.end() :]
