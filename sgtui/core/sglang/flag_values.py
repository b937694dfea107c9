"""Flag values typed the way SGLang reads them: ranges, choices, k/M suffixes, JSON text, switches."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from sgtui.core.sglang.flag_messages import FlagError
from sgtui.core.sglang.flag_table import FLAGS, Flag, FlagDef, TableLike, resolve

# Ranges SGLang enforces (or that only make sense) for the flags the memory model reads.
_RANGES: dict[str, tuple[float | None, float | None, bool]] = {
    # name: (low, high, low_exclusive)
    "--mem-fraction-static": (0.0, 1.0, True),
    "--mamba-full-memory-ratio": (0.0, None, True),
    "--swa-full-tokens-ratio": (0.0, 1.0, True),
    "--tp-size": (1, None, False),
    "--dp-size": (1, None, False),
    "--pp-size": (1, None, False),
    "--attn-dp-size": (1, None, False),
    "--port": (1, 65535, False),
    "--context-length": (1, None, False),
    "--max-running-requests": (1, None, False),
    "--max-total-tokens": (1, None, False),
    "--page-size": (1, None, False),
    "--max-prefill-tokens": (1, None, False),
    "--cuda-graph-max-bs": (1, None, False),
    "--cuda-graph-max-bs-decode": (1, None, False),
    "--speculative-num-steps": (1, None, False),
    "--speculative-eagle-topk": (1, None, False),
    "--speculative-num-draft-tokens": (1, None, False),
    "--max-mamba-cache-size": (1, None, False),
}

# Flags SGLang declares as plain strings but later reads with json.loads.
JSON_TEXT_FLAGS = frozenset({"--json-model-override-args", "--speculative-token-map-json"}) & set(FLAGS)

_HUMAN_INT = re.compile(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)")
_SI = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
_IEC = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


def _describe(flag: Flag, info: FlagDef) -> str:
    """What a flag takes, in words, for error messages."""
    if info.choices:
        return "one of " + ", ".join(str(c) for c in info.choices)
    low, high, exclusive = _RANGES.get(flag.name, (None, None, False))
    noun = {
        "int": "a whole number",
        "human_int": "a whole number (k/M/Ki/Mi suffixes allowed)",
        "float": "a number",
        "json": "a JSON value",
        "str": "a text value",
    }.get(info.kind, "a value")
    if low is not None and high is not None:
        return f"{noun} between {_num(low)} and {_num(high)}"
    if low is not None:
        return f"{noun} {'above' if exclusive else 'of at least'} {_num(low)}"
    return noun


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _bad(flag: Flag, info: FlagDef, given: Any, option: str | None = None) -> FlagError:
    shown = option or flag.name
    return FlagError(f"{shown}: {given!r} is not {_describe(flag, info)}", flag=shown)


def _parse_scalar(flag: Flag, info: FlagDef, raw: Any, option: str | None = None) -> Any:
    """One value, from text (argv) or an already-typed Python value (config mapping, UI form)."""
    kind = "json" if flag.name in JSON_TEXT_FLAGS else info.kind
    value: Any
    if kind in ("int", "human_int"):
        if isinstance(raw, bool):
            raise _bad(flag, info, raw, option)
        if isinstance(raw, int):
            value = raw
        elif isinstance(raw, str):
            text = raw.strip()
            match = _HUMAN_INT.fullmatch(text) if kind == "human_int" else None
            if match:
                number, suffix = match.groups()
                if suffix in _IEC and "." in number:
                    raise _bad(flag, info, raw, option)
                value = int(float(number) * _SI[suffix]) if suffix in _SI else int(number) * _IEC[suffix]
            else:
                try:
                    value = int(text)
                except ValueError:
                    raise _bad(flag, info, raw, option) from None
        else:
            raise _bad(flag, info, raw, option)
    elif kind == "float":
        if isinstance(raw, bool):
            raise _bad(flag, info, raw, option)
        try:
            value = float(raw)
        except (TypeError, ValueError):
            raise _bad(flag, info, raw, option) from None
        if not math.isfinite(value):
            raise _bad(flag, info, raw, option)
    elif kind == "json":
        if isinstance(raw, (dict, list)):
            value = json.dumps(raw)
        elif isinstance(raw, str):
            try:
                json.loads(raw)
            except ValueError:
                raise FlagError(
                    f"{option or flag.name}: {raw!r} is not valid JSON", flag=option or flag.name
                ) from None
            value = raw
        else:
            raise _bad(flag, info, raw, option)
    else:
        if isinstance(raw, (dict, list)):
            value = json.dumps(raw)  # SGLang reads nested config mappings as JSON strings
        elif isinstance(raw, bool):
            value = str(raw).lower()
        elif isinstance(raw, (int, float, str)):
            value = str(raw)
        else:
            raise _bad(flag, info, raw, option)
    if info.choices and value not in info.choices:
        shown = option or flag.name
        folded = {str(c).lower(): c for c in info.choices}
        exact = folded.get(str(value).lower())
        hint = f"; SGLang's choices are case-sensitive: use {exact}" if exact is not None else ""
        raise FlagError(
            f"{shown}: {raw!r} is not {_describe(flag, info)}{hint}",
            flag=shown,
            suggestions=[str(exact)] if exact is not None else [],
        )
    low, high, exclusive = _RANGES.get(flag.name, (None, None, False))
    if isinstance(value, (int, float)) and low is not None:
        too_low = value <= low if exclusive else value < low
        too_high = high is not None and value > high
        if too_low or too_high:
            raise _bad(flag, info, raw, option)
    return value


def _truthy(raw: Any, flag: Flag, option: str | None) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    shown = option or flag.name
    raise FlagError(f"{shown}: {raw!r} is not true or false", flag=shown)


def coerce_value(name: str, raw: Any, version: TableLike = None) -> Any:
    """Type a value for a canonical flag the way SGLang would read it (lists for nargs flags)."""
    table = resolve(version)
    flag = table.flag(name)
    info = table.info(name)
    if info.kind in ("bool", "bool_optional"):
        return _truthy(raw, flag, None)
    if info.nargs in ("+", "*"):
        items = raw if isinstance(raw, (list, tuple)) else [raw]
        if info.nargs == "+" and not items:
            raise FlagError(f"{name}: needs at least one value ({_describe(flag, info)})", flag=name)
        return [_parse_scalar(flag, info, item) for item in items]
    if info.nargs == "?" and raw in (None, ""):
        return ""
    return _parse_scalar(flag, info, raw)
