"""SGLang launch flags <-> a typed launch spec, exactly per release.

The public face of the flag knowledge: tables (`flag_table.py`, one per shipped release, or a target's
own), messages (`flag_messages.py`), values (`flag_values.py`), the spec (`launch_spec.py`), and here
argv and SGLang's `--config` YAML. Parsing follows argparse's rules (unique-prefix abbreviations,
`--flag=value`, nargs lists, negative numbers as values), so what sgtui accepts for a version is what
that version's `python -m sglang.launch_server` accepts, and it explains itself where SGLang would not.

`version` everywhere is an SGLang version string (its exact shipped table, or the nearest older one), a
`FlagTable` (e.g. the target's own), or None (any flag some release has).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sgtui.core.sglang.flag_groups import GROUPS
from sgtui.core.sglang.flag_messages import (
    RENAMES,
    FlagError,
    Rename,
    deprecated_note,
    removed_error,
    unknown_flag_error,
)
from sgtui.core.sglang.flag_table import (
    FLAGS,
    RELEASES,
    Flag,
    FlagDef,
    FlagTable,
    TableLike,
    any_table,
    resolve,
    table_for,
    table_from_rows,
)
from sgtui.core.sglang.flag_values import JSON_TEXT_FLAGS, _describe, _parse_scalar, coerce_value
from sgtui.core.sglang.launch_spec import LaunchSpec, canonical_name, flag_for, spec_from_values

__all__ = [
    "FLAGS",
    "GROUPS",
    "JSON_TEXT_FLAGS",
    "RELEASES",
    "RENAMES",
    "Flag",
    "FlagDef",
    "FlagError",
    "FlagTable",
    "LaunchSpec",
    "ParsedFlags",
    "Rename",
    "canonical_name",
    "coerce_value",
    "flag_for",
    "from_config_mapping",
    "parse_argv",
    "resolve",
    "resolve_config_key",
    "spec_from_values",
    "speculative_base",
    "spelling",
    "table_for",
    "table_from_rows",
    "to_argv",
    "to_config_mapping",
    "unknown_flag_error",
]

# Speculative algorithms SGLang runs as another one (NEXTN is EAGLE with the model's own MTP layers).
SPECULATIVE_ALIASES: dict[str, str] = {"NEXTN": "EAGLE"}
_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


def speculative_base(algorithm: str | None) -> str | None:
    """The algorithm SGLang actually runs: "nextn" -> "EAGLE"; None when speculative decoding is off."""
    if not algorithm:
        return None
    upper = algorithm.upper()
    return SPECULATIVE_ALIASES.get(upper, upper)


@dataclass(frozen=True)
class ParsedFlags:
    spec: LaunchSpec
    values: dict[str, Any]
    notes: list[str]


def _resolve_option(option: str, table: FlagTable, notes: list[str]) -> tuple[Flag, str]:
    """Exact option string, else a unique prefix as argparse allows; returns (flag, option as matched)."""
    index = table.index
    if option in index:
        return table.flag(index[option]), option
    if option.startswith("--") and len(option) > 2:
        matches: dict[str, str] = {}
        for candidate, canonical in index.items():
            if candidate.startswith(option):
                matches.setdefault(canonical, candidate)
        known_elsewhere = table.version is not None and option in any_table().index
        if len(matches) == 1:
            canonical, candidate = next(iter(matches.items()))
            if known_elsewhere:
                notes.append(
                    f"{option} is not a flag of {table.where}, which reads it as an abbreviation of "
                    f"{candidate}; check that this is what you mean"
                )
                return table.flag(canonical), candidate
            notes.append(
                f"{option} resolved to {candidate} (an abbreviation SGLang accepts); the full name is safer, "
                "since a newer SGLang may add a flag that makes it ambiguous"
            )
            return table.flag(canonical), candidate
        if len(matches) > 1 and not known_elsewhere:
            names = sorted(matches.values())
            raise FlagError(
                f"{option} is ambiguous in {table.where}: it could be {', '.join(names)}; "
                "write the full name",
                flag=option,
                suggestions=names,
            )
    raise unknown_flag_error(option, table)


def _takes_value_token(token: str) -> bool:
    return not token.startswith("-") or bool(_NEGATIVE_NUMBER.match(token)) or token == "-"


def parse_argv(argv: list[str], version: TableLike = None) -> ParsedFlags:
    """Parse `sglang.launch_server` arguments; `version=None` accepts any flag some release has."""
    table = resolve(version)
    values: dict[str, Any] = {}
    notes: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        i += 1
        if not token.startswith("-") or _NEGATIVE_NUMBER.match(token):
            raise FlagError(
                f"unexpected argument {token!r}: SGLang takes no positional arguments; every option starts "
                "with -- (a value with spaces needs quotes)",
                flag=token,
            )
        if token == "--":
            raise FlagError("'--' ends the options, but SGLang takes no positional arguments", flag=token)
        option, has_inline, inline = token.partition("=")
        flag, matched = _resolve_option(option, table, notes)
        info = table.info(flag.name)
        if info.removed_message:
            raise removed_error(matched, info.removed_message, table)
        if info.deprecated and table.version is not None:
            notes.append(deprecated_note(matched, flag.name, table))
        value: Any
        if info.kind in ("bool", "bool_optional"):
            if has_inline:
                raise FlagError(
                    f"{matched} takes no value (it is a switch), but was given {inline!r}", flag=matched
                )
            value = not (info.kind == "bool_optional" and matched.startswith("--no-"))
        elif info.nargs in ("+", "*"):
            items = [inline] if has_inline else []
            while not has_inline and i < len(argv) and _takes_value_token(argv[i]):
                items.append(argv[i])
                i += 1
            if not items and info.nargs == "+":
                raise FlagError(f"{matched} needs at least one value ({_describe(flag, info)})", flag=matched)
            value = [_parse_scalar(flag, info, item, matched) for item in items]
        elif info.nargs == "?":
            if has_inline:
                value = _parse_scalar(flag, info, inline, matched)
            elif i < len(argv) and _takes_value_token(argv[i]):
                value = _parse_scalar(flag, info, argv[i], matched)
                i += 1
            else:
                value = ""
        else:
            if has_inline:
                raw = inline
            elif i < len(argv) and _takes_value_token(argv[i]):
                raw = argv[i]
                i += 1
            else:
                raise FlagError(f"{matched} needs a value ({_describe(flag, info)})", flag=matched)
            value = _parse_scalar(flag, info, raw, matched)
        if flag.name in values and values[flag.name] != value:
            notes.append(
                f"{flag.name} is given more than once; the last value ({value!r}) wins, as in SGLang"
            )
        values[flag.name] = value
    return ParsedFlags(spec=spec_from_values(values, table), values=values, notes=notes)


def spelling(flag: Flag, version: TableLike = None) -> str:
    """The option string to write for `flag`: its canonical name, or the name `version` knows it by
    (0.5.11 knows `--smg-http-sidecar-port` only as `--grpc-http-sidecar-port`)."""
    info = resolve(version).info(flag.name)
    return flag.name if flag.name in info.options else info.options[0]


def to_argv(values: Mapping[str, Any], version: TableLike = None) -> list[str]:
    """Arguments for `sglang.launch_server`, each flag under the name `version` knows; store_true flags
    that are False are left out."""
    table = resolve(version)
    argv: list[str] = []
    for name, value in values.items():
        if value is None:
            continue
        flag = flag_for(name, table)
        info = table.info(flag.name)
        option = spelling(flag, table)
        if info.kind == "bool":
            if value:
                argv.append(option)
        elif info.kind == "bool_optional":
            argv.append(option if value else "--no-" + option.removeprefix("--"))
        elif info.nargs in ("+", "*"):
            argv.append(option)
            argv.extend(_text(v) for v in value)
        elif info.nargs == "?" and value == "":
            argv.append(option)
        else:
            text = _text(value)
            if text.startswith("-"):
                argv.append(f"{option}={text}")
            else:
                argv.extend((option, text))
    return argv


def _text(value: Any) -> str:
    if isinstance(value, float):
        return repr(value)
    return str(value)


def resolve_config_key(key: Any, version: TableLike = None) -> Flag:
    """The flag a `--config` key names (dashes or underscores, as SGLang 0.5.23 reads them)."""
    if not isinstance(key, str) or not key.strip("-"):
        raise FlagError(f"config key {key!r} is not a flag name", flag=str(key))
    table = resolve(version)
    for option in ("--" + key.lstrip("-"), "--" + key.lstrip("-").replace("_", "-")):
        if option in table.index:
            return table.flag(table.index[option])
    raise unknown_flag_error("--" + key.lstrip("-").replace("_", "-"), table)


def from_config_mapping(mapping: Mapping[str, Any], version: TableLike = None) -> dict[str, Any]:
    """Values from a mapping in SGLang's `--config` format: dashed or underscored keys, `true` for
    switches (false leaves them off), lists for nargs flags, nested mappings as JSON text."""
    table = resolve(version)
    values: dict[str, Any] = {}
    for key, raw in mapping.items():
        flag = resolve_config_key(key, table)
        option = "--" + str(key).lstrip("-")
        info = table.info(flag.name)
        if info.removed_message:
            raise removed_error(option, info.removed_message, table)
        if info.kind == "bool":
            if not isinstance(raw, bool):
                raise FlagError(f"{option}: {raw!r} is not true or false (it is a switch)", flag=option)
            if raw:
                values[flag.name] = True
            continue
        if isinstance(raw, list) and info.nargs not in ("+", "*"):
            raise FlagError(f"{option}: takes one value ({_describe(flag, info)}), not a list", flag=option)
        if isinstance(raw, list) and not raw:
            continue  # SGLang skips empty lists
        if raw is None:
            raise FlagError(
                f"{option}: has no value; give {_describe(flag, info)} or remove the key", flag=option
            )
        values[flag.name] = coerce_value(flag.name, raw, table)
    return values


def to_config_mapping(values: Mapping[str, Any], version: TableLike = None) -> dict[str, Any]:
    """A mapping SGLang's `--config` loader turns back into the same argv (dashed keys; JSON as text,
    since SGLang before 0.5.23 would pass a nested mapping through `str()`, which is not JSON)."""
    table = resolve(version)
    out: dict[str, Any] = {}
    for name, value in values.items():
        if value is None:
            continue
        flag = flag_for(name, table)
        key = spelling(flag, table).removeprefix("--")
        if table.info(flag.name).kind == "bool":
            if value:
                out[key] = True
        elif isinstance(value, list):
            out[key] = list(value)
        else:
            out[key] = value
    return out
