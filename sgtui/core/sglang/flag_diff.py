"""What changed in `sglang.launch_server`'s flags between two tables: renamed, removed, added, newly
deprecated, and changed definitions (kind, choices, default). Answers "why does my old command fail on
the new version?"; `sgtui flags --diff A B` prints it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sgtui.core.sglang.flag_messages import instead, replacements
from sgtui.core.sglang.flag_table import FlagDef, FlagTable


@dataclass(frozen=True)
class Renamed:
    old: str
    new: str
    use: str  # how the new release says to write it, e.g. "--cuda-graph-backend-prefill=disabled"


@dataclass(frozen=True)
class FlagDiff:
    old: FlagTable
    new: FlagTable
    renamed: list[Renamed] = field(default_factory=list)
    removed: list[tuple[str, str]] = field(default_factory=list)  # (flag, what the new one has instead)
    added: list[str] = field(default_factory=list)
    deprecated: list[tuple[str, str]] = field(default_factory=list)  # (flag, what to use instead)
    changed: list[tuple[str, list[str]]] = field(default_factory=list)  # (flag, what changed, in words)

    def to_json(self) -> dict[str, Any]:
        return {
            "from": {"version": self.old.version, "table": self.old.label, "note": self.old.note},
            "to": {"version": self.new.version, "table": self.new.label, "note": self.new.note},
            "renamed": [{"old": r.old, "new": r.new, "use": r.use} for r in self.renamed],
            "removed": [{"flag": name, "use": use} for name, use in self.removed],
            "added": self.added,
            "deprecated": [{"flag": name, "use": use} for name, use in self.deprecated],
            "changed": [{"flag": name, "changes": what} for name, what in self.changed],
        }


def _usable(table: FlagTable, name: str) -> bool:
    return table.has(name) and not table.info(name).removed_message


def _short(values: Any) -> str:
    return ", ".join(str(v) for v in values)


def _changes(before: FlagDef, after: FlagDef) -> list[str]:
    what: list[str] = []
    if before.kind != after.kind:
        what.append(f"takes {after.kind} (was {before.kind})")
    if before.nargs != after.nargs:
        what.append(f"nargs {after.nargs} (was {before.nargs})")
    if (before.choices or ()) != (after.choices or ()):
        gone = [c for c in before.choices or () if c not in (after.choices or ())]
        new = [c for c in after.choices or () if c not in (before.choices or ())]
        if not after.choices:
            what.append("any value (no choices list any more)")
        elif not before.choices:
            what.append(f"only {_short(after.choices)}")
        else:
            if gone:
                what.append(f"no longer accepts {_short(gone)}")
            if new:
                what.append(f"also accepts {_short(new)}")
    if before.default != after.default:
        what.append(f"default {after.default!r} (was {before.default!r})")
    dropped = [o for o in before.options if o not in after.options]
    if dropped:
        what.append(f"no longer spelled {_short(dropped)}")
    return what


def diff_tables(old: FlagTable, new: FlagTable) -> FlagDiff:
    """The flag changes from `old` to `new` (either direction in release order)."""
    result = FlagDiff(old, new)
    paired: set[str] = set()
    for rename in replacements():
        gone_or_deprecated = not _usable(new, rename.old) or new.info(rename.old).deprecated
        arrived = _usable(new, rename.new) and not old.has(rename.new)
        if _usable(old, rename.old) and arrived and gone_or_deprecated:
            result.renamed.append(Renamed(rename.old, rename.new, rename.use or rename.new))
            paired.add(rename.new)
            if not _usable(new, rename.old):
                paired.add(rename.old)
    for name in old.names:
        if _usable(old, name) and not _usable(new, name) and name not in paired:
            found = instead(name, new)
            result.removed.append((name, found[1] if found else ""))
    for name in new.names:
        if _usable(new, name) and not _usable(old, name) and name not in paired:
            result.added.append(name)
    for name in new.names:
        if not (_usable(old, name) and _usable(new, name)):
            continue
        before, after = old.info(name), new.info(name)
        if after.deprecated and not before.deprecated:
            result.deprecated.append((name, after.new_flag or ""))
        what = _changes(before, after)
        if what:
            result.changed.append((name, what))
    result.removed.sort()
    result.added.sort()
    return result
