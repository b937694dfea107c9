"""SGLang's `launch_server` flags per release: the shipped tables and a target's own table.

`flag_tables.json` (written by `tools/extract_sglang_flags.py` from every release's wheel) holds one entry
per flag with the release ranges where each definition holds. A `FlagTable` is the view for one SGLang
version: the exact shipped release, the nearest older shipped release (a dev build or a release newer
than the tables, with a note), a target's own table read by `remote/flag_probe.py`, or, for no version,
the union of all releases. Everything that parses or writes flags takes a version string or a FlagTable.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import Any, Literal, NamedTuple

from sgtui.core.sglang.versions import ReleaseVersion, parse_version

TABLE_PATH = Path(__file__).with_name("flag_tables.json")
HELP_PATH = Path(__file__).with_name("flag_help.json")
Source = Literal["shipped", "nearest", "target", "any"]


class FlagDef(NamedTuple):
    """How one release defines a flag (what argparse holds). A NamedTuple: about a thousand are built
    when the module loads, and a tuple is the cheapest immutable record to build."""

    options: tuple[str, ...]
    kind: str = "str"  # str | int | float | human_int | json | bool | bool_optional
    nargs: str | None = None  # None (one value), "+", "*", "?"
    choices: tuple[Any, ...] | None = None
    default: Any = None
    deprecated: bool = False
    new_flag: str | None = None
    removed_message: str | None = None  # a retired flag SGLang still parses, only to stop with this text

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> FlagDef:
        get = raw.get
        choices = get("choices")
        return cls(
            tuple(raw["options"]),
            get("kind", "str"),
            get("nargs"),
            tuple(choices) if choices else None,
            get("default"),
            bool(get("deprecated")),
            get("new_flag"),
            get("error_message"),
        )


class Span(NamedTuple):
    """Releases `first`..`last` (positions in RELEASES, inclusive) define the flag as `definition`."""

    first: int
    last: int
    definition: FlagDef


class Flag(NamedTuple):
    """One flag across releases, under its newest canonical dashed name."""

    name: str
    dest: str
    group: str
    spans: tuple[Span, ...]

    @property
    def help(self) -> str:
        return help_text(self.name)

    def at(self, position: int) -> FlagDef | None:
        """The definition in the shipped release at `position`, None when that release lacks the flag."""
        for span in self.spans:
            if span.first <= position <= span.last:
                return span.definition
        return None

    @property
    def newest(self) -> FlagDef:
        return self.spans[-1].definition

    @property
    def releases(self) -> tuple[str, ...]:
        """Every shipped release that has the flag, oldest first."""
        last = len(RELEASES) - 1
        return tuple(RELEASES[i] for s in self.spans for i in range(s.first, min(s.last, last) + 1))

    @property
    def ranges(self) -> tuple[tuple[str, str], ...]:
        """(first, last) shipped release of each stretch that has the flag, e.g. (("0.4.0", "0.5.13"),)."""
        return tuple(_merged_ranges(self.spans))

    @property
    def kind(self) -> str:
        return self.newest.kind

    @property
    def is_store_true(self) -> bool:
        return self.kind == "bool"

    @property
    def aliases(self) -> tuple[str, ...]:
        seen = {self.name}
        out: list[str] = []
        for span in self.spans:
            for option in span.definition.options:
                if option not in seen:
                    seen.add(option)
                    out.append(option)
        return tuple(out)


def _merged_ranges(spans: Iterable[Span]) -> list[tuple[str, str]]:
    ranges: list[list[int]] = []
    for span in spans:
        if ranges and ranges[-1][1] == span.first - 1:
            ranges[-1][1] = span.last
        else:
            ranges.append([span.first, span.last])
    return [(RELEASES[a], RELEASES[b]) for a, b in ranges if b < len(RELEASES)]


def _load() -> tuple[tuple[str, ...], dict[str, Flag]]:
    raw = json.loads(TABLE_PATH.read_text())
    releases = tuple(raw["releases"])
    position = {release: i for i, release in enumerate(releases)}
    flags: dict[str, Flag] = {}
    for name, entry in raw["flags"].items():
        spans = tuple(
            Span(position[first], position[last], FlagDef.from_json(definition))
            for first, last, definition in entry["spans"]
        )
        flags[name] = Flag(name, entry["dest"], entry["group"], spans)
    return releases, flags


RELEASES, FLAGS = _load()
_POSITION = {release: i for i, release in enumerate(RELEASES)}


@cache
def _release_keys() -> list[ReleaseVersion]:
    return [parse_version(r) for r in RELEASES]


@cache
def _helps() -> dict[str, str]:
    data: dict[str, str] = json.loads(HELP_PATH.read_text())
    return data


def help_text(name: str) -> str:
    """SGLang's help text for a shipped flag (read on first use: only the form and `sgtui flags` show it)."""
    return _helps().get(name, "")


@dataclass(frozen=True, eq=False)
class FlagTable:
    """The flags one SGLang version has: canonical name -> definition, and option string -> name.

    `version` is what the user runs, exactly as given (every message names it); `release` the shipped
    release whose table this is (None for a target's own table and for the union)."""

    version: str | None
    release: str | None
    source: Source
    defs: Mapping[str, FlagDef]
    flags: Mapping[str, Flag]
    note: str | None = None
    position: float = float("inf")  # where `version` falls among RELEASES (x.5 between two of them)
    index: dict[str, str] = field(default_factory=dict)
    extra_help: Mapping[str, str] = field(default_factory=dict)  # flags only a target's table has

    def __post_init__(self) -> None:
        if not self.index:
            for name, definition in self.defs.items():
                for option in definition.options:
                    self.index.setdefault(option, name)

    @property
    def label(self) -> str:
        """Which table is in use, for the header: "shipped 0.5.14", "from the target (0.5.24.dev3)"..."""
        if self.source == "shipped":
            return f"shipped {self.release}"
        if self.source == "nearest":
            return f"nearest older {self.release} (offline)"
        if self.source == "target":
            return f"from the target ({self.version})"
        return "any release"

    @property
    def where(self) -> str:
        """How messages name the version: "SGLang 0.5.18"; the union names no version."""
        return f"SGLang {self.version}" if self.version else "any SGLang release sgtui knows"

    def has(self, name: str) -> bool:
        return name in self.defs

    def info(self, name: str) -> FlagDef:
        """This version's definition of canonical flag `name`; the newest shipped one when it lacks it."""
        found = self.defs.get(name)
        return found if found is not None else self.flag(name).newest

    def flag(self, name: str) -> Flag:
        return self.flags[name]

    def help(self, name: str) -> str:
        return self.extra_help.get(name) or help_text(name)

    @cached_property
    def names(self) -> tuple[str, ...]:
        return tuple(self.defs)


def release_position(version: ReleaseVersion) -> float:
    """Index in RELEASES of an exact release, else the midpoint after the nearest older one."""
    exact = _POSITION.get(str(version))
    if exact is not None and not version.is_dev:
        return float(exact)
    keys = _release_keys()
    i = bisect.bisect_left(keys, version)
    if i < len(RELEASES) and keys[i] == version:
        return float(i)
    return i - 0.5


@cache
def shipped_table(release: str) -> FlagTable:
    position = _POSITION[release]
    defs = {}
    for name, flag in FLAGS.items():
        definition = flag.at(position)
        if definition is not None:
            defs[name] = definition
    return FlagTable(release, release, "shipped", defs, FLAGS, position=float(position))


def _newest_usable(flag: Flag) -> FlagDef:
    """The newest definition that is not a retired flag's error (the union accepts what any release does)."""
    usable = [s.definition for s in flag.spans if not s.definition.removed_message]
    return usable[-1] if usable else flag.newest


@cache
def any_table() -> FlagTable:
    """The union: every flag some release has, under its newest definition."""
    defs = {name: _newest_usable(flag) for name, flag in FLAGS.items()}
    newest: dict[str, tuple[int, str]] = {}  # an option string means what the newest release says
    for name, flag in FLAGS.items():
        for span in flag.spans:
            for option in span.definition.options:
                if option not in newest or newest[option][0] < span.last:
                    newest[option] = (span.last, name)
    index = {option: name for option, (_, name) in newest.items()}
    return FlagTable(None, None, "any", defs, FLAGS, index=index)


@cache
def table_for(version: str | None) -> FlagTable:
    """The table for an SGLang version string: its own shipped table when it is a shipped release, else the
    nearest older one with a note (a dev build, a post release sgtui has no table for, a newer release).

    An untagged build ("0.0.0.dev0") or one older than every table gets the nearest table there is, said
    so in the note; reading the target's own table (`remote/flag_probe.py`) makes any of them exact.
    """
    if version is None:
        return any_table()
    parsed = parse_version(version)
    text = str(version).strip()
    position = release_position(parsed)
    if position.is_integer():
        shipped = shipped_table(RELEASES[int(position)])
        return FlagTable(
            text, shipped.release, "shipped", shipped.defs, FLAGS, position=position, index=shipped.index
        )
    if parsed.is_untagged:
        base, note = RELEASES[-1], f"SGLang {text} is an untagged source build"
    elif position < 0:
        base, note = RELEASES[0], f"SGLang {text} is older than every shipped table"
    else:
        base, note = RELEASES[int(position - 0.5)], f"sgtui ships no table for SGLang {text}"
    shipped = shipped_table(base)
    return FlagTable(
        text,
        base,
        "nearest",
        shipped.defs,
        FLAGS,
        note=f"{note}: using the {base} flags; connect to read the target's own table",
        position=position,
        index=shipped.index,
    )


TableLike = FlagTable | str | None


def resolve(version: TableLike) -> FlagTable:
    """A FlagTable for a version string, a table, or None (the union)."""
    return version if isinstance(version, FlagTable) else table_for(version)


def table_from_rows(rows: Sequence[Mapping[str, Any]], version: str) -> FlagTable:
    """A target's own table from the payload's rows: flags sgtui ships keep their canonical names (found by
    any shared option string); a flag no shipped release has becomes its own entry."""
    from sgtui.core.sglang.flag_groups import classify

    near = table_for(version)
    union = any_table()
    flags: dict[str, Flag] = dict(FLAGS)
    defs: dict[str, FlagDef] = {}
    helps: dict[str, str] = {}
    for row in rows:
        definition = FlagDef.from_json(row)
        name = next((near.index[o] for o in definition.options if o in near.index), None)
        if name is None:
            name = next((union.index[o] for o in definition.options if o in union.index), None)
        if name is None or name in defs:
            name = definition.options[0]
            span = Span(len(RELEASES), len(RELEASES), definition)  # after every shipped release
            flags[name] = Flag(name, str(row.get("dest", "")), classify(str(row.get("dest", ""))), (span,))
            helps[name] = " ".join(str(row.get("help") or "").split())
        defs[name] = definition
    return FlagTable(version, None, "target", defs, flags, position=near.position, extra_help=helps)
