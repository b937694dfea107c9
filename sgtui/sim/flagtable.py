"""The simulated SGLang's own parser: a shipped table plus flags only the simulator has.

`install_parser(pkg, version)` gives the fake `sglang` package a `srt/server_args.py` whose
`ServerArgs.add_cli_args` builds a real argparse parser (stdlib only, from `flag_rows.json` beside it),
so `remote/flag_probe.py` reads the sim's table exactly as it reads a real install's. Because of the
extra flags that table differs from every shipped one, which is how tests see the form follow the
target's own table. The stand-in parses its argv with the same table (`sim_table`), as SGLang would.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from sgtui.core.sglang.flags import FlagTable, table_for, table_from_rows

# Flags only the simulated SGLang has (the stand-in honours them).
SIM_ROWS: tuple[dict[str, Any], ...] = (
    {
        "options": ["--sim-log-note"],
        "dest": "sim_log_note",
        "kind": "str",
        "nargs": None,
        "choices": None,
        "default": None,
        "help": "A line the simulated server writes to its log at start (simulator only).",
    },
)

_SERVER_ARGS = '''"""The simulated SGLang's ServerArgs: only the parser (see sgtui.sim.flagtable)."""

import argparse
import json
import os


def human_readable_int(text):
    return int(text)


def loads(text):
    return json.loads(text)


class DeprecatedAliasStoreAction(argparse._StoreAction):
    def __init__(self, option_strings, dest, new_flag=None, **kwargs):
        self.new_flag = new_flag
        super().__init__(option_strings, dest, **kwargs)


class DeprecatedStoreTrueAction(argparse._StoreTrueAction):
    def __init__(self, option_strings, dest, new_flag=None, **kwargs):
        self.new_flag = new_flag
        super().__init__(option_strings, dest, **kwargs)


class DeprecatedAction(argparse.Action):
    def __init__(self, option_strings, dest, error_message=None, nargs=0, **kwargs):
        self.error_message = error_message
        super().__init__(option_strings, dest, nargs=nargs, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        parser.error(self.error_message)


TYPES = {"int": int, "float": float, "human_int": human_readable_int, "json": loads}


class ServerArgs:
    @staticmethod
    def add_cli_args(parser):
        with open(os.path.join(os.path.dirname(__file__), "flag_rows.json")) as rows_file:
            rows = json.load(rows_file)
        for row in rows:
            options = row["options"]
            kwargs = {"dest": row["dest"], "help": row.get("help") or None}
            kind = row.get("kind", "str")
            if row.get("error_message"):
                kwargs.update(action=DeprecatedAction, error_message=row["error_message"])
            elif kind == "bool" and row.get("deprecated"):
                kwargs.update(action=DeprecatedStoreTrueAction, new_flag=row.get("new_flag"))
            elif kind == "bool":
                kwargs.update(action="store_true")
            elif kind == "bool_optional":
                plain = [o for o in options if not any(o == "--no-" + p[2:] for p in options)]
                options = plain
                kwargs.update(action=argparse.BooleanOptionalAction, default=row.get("default"))
            else:
                if TYPES.get(kind):
                    kwargs["type"] = TYPES[kind]
                if row.get("nargs"):
                    kwargs["nargs"] = int(row["nargs"]) if row["nargs"].isdigit() else row["nargs"]
                if row.get("choices"):
                    kwargs["choices"] = row["choices"]
                kwargs["default"] = row.get("default")
                if row.get("deprecated"):
                    kwargs.update(action=DeprecatedAliasStoreAction, new_flag=row.get("new_flag"))
            parser.add_argument(*options, **kwargs)
'''


@cache
def sim_rows(version: str) -> tuple[dict[str, Any], ...]:
    """The rows of the simulated SGLang `version`: the shipped table for it, then SIM_ROWS."""
    table = table_for(version)
    rows: list[dict[str, Any]] = []
    for name, info in table.defs.items():
        row: dict[str, Any] = {
            "options": list(info.options),
            "dest": table.flag(name).dest,
            "kind": info.kind,
            "nargs": info.nargs,
            "choices": list(info.choices) if info.choices else None,
            "default": info.default,
            "help": "",
        }
        if info.deprecated:
            row["deprecated"] = True
        if info.new_flag:
            row["new_flag"] = info.new_flag
        if info.removed_message:
            row["error_message"] = info.removed_message
        rows.append(row)
    return (*rows, *SIM_ROWS)


def sim_table(version: str) -> FlagTable:
    """What the simulated SGLang `version` parses with (as `flag_probe` reads it from the target)."""
    return table_from_rows(sim_rows(version), version)


def install_parser(pkg: Path, version: str) -> None:
    """Give the fake `sglang` package at `pkg` SGLang's parser module."""
    srt = pkg / "srt"
    srt.mkdir(parents=True, exist_ok=True)
    (srt / "__init__.py").write_text("")
    (srt / "server_args.py").write_text(_SERVER_ARGS)
    (srt / "flag_rows.json").write_text(json.dumps(list(sim_rows(version))))
