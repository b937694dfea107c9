"""The flags the form offers, for the target's SGLang version, from core.flags' table."""

from __future__ import annotations

from typing import Any

from sgtui.core.errors import UserError
from sgtui.core.flags import FLAGS, coerce_value, version_family
from sgtui.ui.widgets.launch_form import FlagInfo, parse_value


def flag_catalogue(version: str | None) -> dict[str, FlagInfo]:
    """Canonical name -> FlagInfo; flags this version lacks are kept but marked unknown."""
    family = version_family(version) if version else None
    out: dict[str, FlagInfo] = {}
    for name, flag in FLAGS.items():
        info = flag.info(family)
        out[name] = FlagInfo(
            name=name,
            group=flag.group,
            kind=info.kind,
            choices=tuple(str(c) for c in info.choices) if info.choices else None,
            help=flag.help,
            multi=info.nargs in ("+", "*"),
            known=family is None or family in flag.per_version,
        )
    return out


def parse_flag_text(info: FlagInfo, text: str, version: str | None) -> Any:
    """Type a field's text exactly as SGLang would (ranges, choices, human ints); ValueError if not."""
    text = text.strip()
    if not text:
        return None
    if info.name not in FLAGS:
        return parse_value(info, text)
    raw: Any = text.split() if info.multi else text
    try:
        return coerce_value(info.name, raw, version)
    except UserError as exc:
        message = str(exc)
        raise ValueError(message.removeprefix(f"{info.name}: ")) from None
