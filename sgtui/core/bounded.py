"""Bounded reading of files that come from outside: JSON with a size limit and no RecursionError, and
short reprs of bad values (YAML without aliases is `core/yamlsafe.py`).

A model's config.json may sit on a shared disk and a run record on a shared box: a deeply nested JSON must
not end in a RecursionError traceback, and an error message must not quote a megabyte-long value. Every limit
here becomes one clear `UserError` line.
"""

from __future__ import annotations

import json
import re
from typing import Any

from sgtui.core.errors import UserError

JSON_MAX_BYTES = 64 * 2**20  # the largest real model.safetensors.index.json files are a few MB
REPR_MAX = 60
# Python refuses past 4,300 digits with a ValueError; no real value has 40 (a petabyte in bytes has 16).
# JSON and YAML (core/yamlsafe.py) share it.
MAX_INT_DIGITS = 40


class BoundedInputError(UserError):
    """A file past one of the limits above; the message names the file, the line and what to do."""


def short_repr(value: object, limit: int = REPR_MAX) -> str:
    """repr() cut to `limit` characters, so a huge bad value cannot flood an error message."""
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[: limit - 15]}... ({len(text):,} chars)"


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKET = re.compile(r"[\[\]{}]")


def _deepest(text: str) -> tuple[int, int]:
    """(depth, line) of the deepest nesting, brackets inside strings skipped."""
    stripped = _STRING.sub(lambda m: "\n" * m.group().count("\n"), text)
    depth = deepest = 0
    at = 0
    for match in _BRACKET.finditer(stripped):
        depth += 1 if match.group() in "[{" else -1
        if depth > deepest:
            deepest, at = depth, match.start()
    return deepest, stripped.count("\n", 0, at) + 1


class _TooLong(Exception):
    def __init__(self, digits: str) -> None:
        super().__init__(digits[:20])
        self.digits = digits


def _bounded_int(digits: str) -> int:
    if len(digits) > MAX_INT_DIGITS:
        raise _TooLong(digits)
    return int(digits)


def parse_json_or_none(text: str | bytes, max_bytes: int = 1 << 20, max_depth: int = 64) -> Any:
    """JSON from a host or a port (a run record, a result marker, an HTTP body): None when it is not
    JSON or is past a limit (size, nesting, digits). Such input is never ours to explain line by line:
    the caller treats None as "damaged"."""
    if len(text) > max_bytes:
        return None
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if text.count("[") + text.count("{") > max_depth and _deepest(text)[0] > max_depth:
        return None
    try:
        return json.loads(text, parse_int=_bounded_int)
    except (ValueError, RecursionError, _TooLong):
        return None


def load_json(text: str | bytes, file: str, *, max_bytes: int = JSON_MAX_BYTES) -> Any:
    """json.loads with a size limit, and nesting too deep for the parser as one error line rather than
    a RecursionError. Syntax errors propagate as `json.JSONDecodeError` (callers word them for their file
    kind); the limits raise `BoundedInputError`."""
    if len(text) > max_bytes:
        raise BoundedInputError(
            f"{file}: {len(text):,} bytes is past the {max_bytes:,}-byte limit for this file; "
            "is this the right file?"
        )
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    try:
        return json.loads(text, parse_int=_bounded_int)
    except _TooLong as long:
        at = text.find(long.digits)
        raise BoundedInputError(
            f"{file}, line {text.count(chr(10), 0, max(at, 0)) + 1}: an integer of {len(long.digits):,} "
            f"digits; no real value has more than {MAX_INT_DIGITS}, so the file looks corrupt or hostile"
        ) from None
    except RecursionError:
        depth, line = _deepest(text)
        raise BoundedInputError(
            f"{file}, line {line}: JSON nested {depth:,} levels deep, too deep to read; "
            "no real config nests like that, so the file looks corrupt or hostile"
        ) from None
