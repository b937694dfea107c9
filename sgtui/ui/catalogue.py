"""The flags the form offers: the target's own table when it was read, else the shipped one for the
version (exact, or the nearest older one), from core.sglang.flags."""

from __future__ import annotations

from typing import Any

from sgtui.core.errors import UserError
from sgtui.core.sglang.flags import FlagTable, coerce_value, resolve
from sgtui.ui.widgets.launch_form import FlagInfo, parse_value


def flag_catalogue(version: FlagTable | str | None) -> dict[str, FlagInfo]:
    """Canonical name -> FlagInfo; flags this version lacks are kept but marked unknown."""
    table = resolve(version)
    out: dict[str, FlagInfo] = {}
    for name, flag in table.flags.items():
        info = table.info(name)
        out[name] = FlagInfo(
            name=name,
            group=flag.group,
            kind=info.kind,
            choices=tuple(str(c) for c in info.choices) if info.choices else None,
            help=table.help(name),
            multi=info.nargs in ("+", "*"),
            known=table.version is None or table.has(name),
        )
    return out


def parse_flag_text(info: FlagInfo, text: str, version: FlagTable | str | None) -> Any:
    """Type a field's text exactly as SGLang would (ranges, choices, human ints); ValueError if not."""
    text = text.strip()
    if not text:
        return None
    table = resolve(version)
    if info.name not in table.flags:
        return parse_value(info, text)
    raw: Any = text.split() if info.multi else text
    try:
        return coerce_value(info.name, raw, table)
    except UserError as exc:
        message = str(exc)
        raise ValueError(message.removeprefix(f"{info.name}: ")) from None


def flag_table_label(version: FlagTable | str | None) -> str:
    """Which table is in use, for the status line: "shipped 0.5.14", "from the target (0.5.24.dev3)",
    "nearest older 0.5.23 (offline)"."""
    return resolve(version).label
