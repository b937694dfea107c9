"""A flag as the launch form knows it (`FlagInfo`), and its value as text and back: typed values in
SGLang's `--config` mapping shape (int, float, bool, list, dict), "" for not set."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FlagInfo:
    """What the form needs to know about one SGLang flag (for the target's version)."""

    name: str
    group: str = "other"
    kind: str = "str"  # str | int | float | bool | json | human_int | bool_optional
    choices: tuple[str, ...] | None = None
    help: str = ""
    multi: bool = False  # takes several values (nargs)
    known: bool = True  # does the target's SGLang version know it


def field_id(flag: str) -> str:
    """A widget id for any flag name, even one from a hand-edited profile full of brackets."""
    name = flag.lstrip("-").replace("_", "-")
    return "flag-" + re.sub(r"[^A-Za-z0-9-]", lambda m: f"_{ord(m.group()):x}", name)


def format_value(value: Any) -> str:
    if isinstance(value, list | tuple):
        return " ".join(str(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, separators=(",", ":"))
    return "" if value is None else str(value)


def _one(info: FlagInfo, text: str) -> Any:
    if info.kind in ("int", "human_int"):
        try:
            return int(text.replace("_", ""))
        except ValueError:
            raise ValueError(f"expected a whole number, got {text!r}") from None
    if info.kind == "float":
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"expected a number such as 0.85, got {text!r}") from None
    if info.choices and text not in info.choices:
        raise ValueError(f"{text!r} is not one of: {', '.join(info.choices)}")
    return text


def parse_value(info: FlagInfo, text: str) -> Any:
    """The typed value for the field's text; empty means "not set". Raises ValueError with a clear reason."""
    text = text.strip()
    if not text:
        return None
    if info.kind == "json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    if info.kind == "bool_optional":
        low = text.lower()
        if low in ("true", "yes", "on", "1"):
            return True
        if low in ("false", "no", "off", "0"):
            return False
        raise ValueError(f"expected true or false, got {text!r}")
    if info.multi:
        return [_one(info, part) for part in text.split()]
    return _one(info, text)


Parser = Callable[[FlagInfo, str], Any]
