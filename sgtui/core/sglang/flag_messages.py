"""What to say about a flag a version does not have: when SGLang added or removed it, and what to use.

Every message names the user's exact version ("SGLang 0.5.18 has no --attn-dp-size (added in 0.5.22); use
--enable-dp-attention"), never a family. Replacements come from SGLang itself (a deprecated alias's
`new_flag`) and, where SGLang dropped a flag without saying, from the short hand-kept RENAMES.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

from sgtui.core.errors import UserError
from sgtui.core.sglang.flag_table import FLAGS, RELEASES, Flag, FlagTable, any_table


class FlagError(UserError):
    """A flag or value SGLang would reject; `.flag` and `.suggestions` let the UI point at the fix."""

    def __init__(self, message: str, *, flag: str | None = None, suggestions: Iterable[str] = ()) -> None:
        super().__init__(message)
        self.flag = flag
        self.suggestions = list(suggestions)


@dataclass(frozen=True)
class Rename:
    """A flag SGLang replaced with another. `use` is how to write the replacement, as SGLang says it
    ("--cuda-graph-backend-prefill=disabled"); `why` an optional explanation."""

    old: str
    new: str
    use: str = ""
    why: str = ""

    @property
    def reversible(self) -> bool:
        """Whether the old name is the thing to use on a release that lacks the new one: not when the old
        flag was one value of the new one (`--disable-piecewise-cuda-graph` = `...-prefill=disabled`)."""
        return "=" not in self.use


# Only what SGLang's own deprecations do not already say (those are read from the tables): none so far.
RENAMES: tuple[Rename, ...] = ()
_OPTION = re.compile(r"--[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9]")


@cache
def replacements() -> tuple[Rename, ...]:
    """Every replacement: SGLang's deprecated aliases that name their replacement, then RENAMES."""
    union = any_table().index
    pairs: dict[tuple[str, str], Rename] = {}
    for flag in FLAGS.values():
        for span in flag.spans:
            text = span.definition.new_flag or ""
            match = _OPTION.match(text)
            if match and match.group(0) in union:
                new = union[match.group(0)]
                if new != flag.name:
                    pairs.setdefault((flag.name, new), Rename(flag.name, new, text))
    for rename in RENAMES:
        pairs.setdefault((rename.old, rename.new), rename)
    return tuple(pairs.values())


def instead(name: str, table: FlagTable) -> tuple[str, str, str] | None:
    """(flag, how to write it, why) that `table`'s version has in place of canonical `name`: the
    replacement of a removed flag, or the old name of one added later (when exactly one fits)."""

    def usable(other: str) -> bool:
        return table.has(other) and not table.info(other).removed_message

    for rename in replacements():
        if rename.old == name and usable(rename.new):
            return rename.new, rename.use or rename.new, rename.why
    older = [r for r in replacements() if r.new == name and r.reversible and usable(r.old)]
    if len(older) == 1:
        return older[0].old, older[0].old, older[0].why
    return None


def history(flag: Flag, table: FlagTable) -> str:
    """When the flag came and went relative to `table`'s version: "added in 0.5.22", "removed in 0.5.20",
    "removed in 0.5.2, back in 0.5.10"; for a target's own table, which shipped releases have it."""
    before = [s for s in flag.spans if s.last < table.position and s.last < len(RELEASES)]
    after = [s for s in flag.spans if s.first > table.position and s.first < len(RELEASES)]
    parts: list[str] = []
    if before:
        gone = before[-1].last + 1
        if gone < len(RELEASES) and gone <= table.position:
            parts.append(f"removed in {RELEASES[gone]}")
        else:
            parts.append(f"last in {RELEASES[before[-1].last]}")
    if after:
        parts.append(("back in " if before else "added in ") + RELEASES[after[0].first])
    return ", ".join(parts)


def unknown_flag_error(option: str, table: FlagTable) -> FlagError:
    """The most useful thing to say about an option `table`'s version does not have."""
    union = any_table().index
    name = table.index.get(option) or union.get(option)
    if table.version is not None and name is not None and name in table.flags:
        flag = table.flag(name)
        when = history(flag, table)
        message = f"{table.where} has no {option}" + (f" ({when})" if when else "")
        found = instead(name, table)
        if found is not None:
            other, use, why = found
            because = f" ({why})" if why else ""
            return FlagError(f"{message}; use {use}{because}", flag=option, suggestions=[other])
        return FlagError(message, flag=option)
    import difflib  # only for the error path

    stem = option.split("=", 1)[0]
    near = difflib.get_close_matches(stem, list(table.index), n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(near)}?" if near else "; check `python -m sglang.launch_server --help`"
    return FlagError(f"unknown flag {stem}: not a flag of {table.where}{hint}", flag=stem, suggestions=near)


def removed_error(option: str, message: str, table: FlagTable) -> FlagError:
    """A retired flag the release still parses only to stop with its own message."""
    return FlagError(f"{table.where} stops at {option}: {message}", flag=option)


def deprecated_note(option: str, name: str, table: FlagTable) -> str:
    """The note for a deprecated alias that still works: what the release says to use instead."""
    definition = table.info(name)
    replacement = definition.new_flag
    if not replacement:
        found = instead(name, table)
        replacement = found[1] if found else None
    use = f"; use {replacement} instead" if replacement else ""
    return f"{option} is deprecated in {table.where} (it still works){use}"
