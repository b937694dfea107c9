"""The target's own SGLang flag table: the source of truth for the form, validation and `to_argv`.

`read_flag_table` runs `flag_payload.py` with the profile's interpreter inside the target (through
`Target.command`, so every layer is quoted), which builds SGLang's own parser with heavy modules stubbed:
no GPU, no model, no network; about a second and a few tens of MB. The rows are cached per host,
target, interpreter and version under the user cache dir, so dev builds and releases newer than the
shipped tables are exact after one read. Any failure is one line, and the shipped table (exact, or the
nearest older release) is used instead.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from sgtui.core.atomic import write_atomic
from sgtui.core.bounded import load_json
from sgtui.core.errors import UserError
from sgtui.core.paths import cache_dir
from sgtui.core.sglang.flags import FlagTable, table_for, table_from_rows
from sgtui.core.sglang.versions import parse_version
from sgtui.remote.connection import Transport
from sgtui.remote.targets import Target

MARKER = "@@sgtui-flags "
PAYLOAD_PATH = Path(__file__).with_name("flag_payload.py")
MAX_OUTPUT = 4 * 2**20  # a table is ~150 kB with help texts
KINDS = frozenset({"str", "int", "float", "human_int", "json", "bool", "bool_false", "bool_optional"})
CACHE_FORMAT = 1


@dataclass(frozen=True)
class ProbeResult:
    """The table to use, and why: `problem` is the one line shown when the target's table could not be
    read (then `table` is the shipped fallback); `cached` when it came from the local cache."""

    table: FlagTable
    problem: str | None = None
    cached: bool = False


@cache
def payload_code() -> str:
    return PAYLOAD_PATH.read_text(encoding="utf-8")


def cache_path(host: str, target: Any, python: str, version: str, root: Path | None = None) -> Path:
    """Where the table of (host, target, interpreter, version) is cached; `target` has kind and id."""
    key = json.dumps([host, target.kind, target.id, python, version])
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]
    return (root or cache_dir()) / "flag-tables" / f"{digest}.json"


def _check_rows(rows: Any) -> list[dict[str, Any]]:
    """The payload's rows, checked field by field: they come from outside and drive the form."""
    if not isinstance(rows, list) or not rows:
        raise ValueError("no flags in the table")
    for row in rows:
        options = row.get("options") if isinstance(row, dict) else None
        if not (
            isinstance(options, list)
            and options
            and all(isinstance(o, str) and o.startswith("-") and len(o) < 200 for o in options)
        ):
            raise ValueError(f"a row without valid option strings: {str(row)[:80]}")
        nargs = row.get("nargs")
        if row.get("kind", "str") not in KINDS:
            raise ValueError(f"{options[0]}: unknown kind {str(row.get('kind'))[:20]!r}")
        if nargs not in (None, "+", "*", "?") and not (isinstance(nargs, str) and nargs.isdigit()):
            raise ValueError(f"{options[0]}: unknown nargs {str(nargs)[:20]!r}")
        if row.get("choices") is not None and not isinstance(row["choices"], list):
            raise ValueError(f"{options[0]}: choices is not a list")
        for key in ("new_flag", "error_message", "help", "dest"):
            if row.get(key) is not None and not isinstance(row[key], str):
                raise ValueError(f"{options[0]}: {key} is not text")
    return rows


def _parse_output(stdout: str, where: str) -> dict[str, Any]:
    line = next((ln for ln in stdout.splitlines() if ln.startswith(MARKER)), None)
    if line is None:
        raise ValueError("the payload printed no table")
    data = load_json(line[len(MARKER) :], f"the flag table from {where}", max_bytes=MAX_OUTPUT)
    if not isinstance(data, dict):
        raise ValueError("the payload's output is not a table")
    if "error" in data:
        raise ValueError(f"SGLang's parser did not build: {str(data['error'])[:200]}")
    data["rows"] = _check_rows(data.get("rows"))
    return data


def _read_cache(path: Path, version: str) -> FlagTable | None:
    try:
        data = load_json(path.read_bytes(), str(path), max_bytes=MAX_OUTPUT)
        if data.get("format") != CACHE_FORMAT or data.get("version") != version:
            return None
        return table_from_rows(_check_rows(data["rows"]), version)
    except (OSError, ValueError, UserError, KeyError, TypeError, AttributeError):
        return None  # unreadable or stale: read the target again


def _write_cache(path: Path, version: str, rows: list[dict[str, Any]]) -> None:
    """Atomically, readable only by this user."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_atomic(path, json.dumps({"format": CACHE_FORMAT, "version": version, "rows": rows}), mode=0o600)
    except OSError:
        pass  # a cache: the next open reads the target again


def cached_table(host: str, target: Any, python: str, version: str) -> FlagTable | None:
    """The target's own table if it was read before (no connection); for `load_profile(flag_tables=)`."""
    return _read_cache(cache_path(host, target, python, version), version)


async def read_flag_table(
    conn: Transport,
    target: Target,
    python: str,
    version: str | None,
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 60,
    use_cache: bool = True,
    cache_root: Path | None = None,
) -> ProbeResult:
    """The target's own table for `python` (SGLang `version`, as `targets.sglang_version` found it)."""
    host = conn.host.name
    where = f"{host} {target.label}" if target.kind != "host" else host
    fallback = table_for(version)
    path = cache_path(host, target, python, version, cache_root) if version else None
    if use_cache and path is not None and version is not None:
        cached = _read_cache(path, version)
        if cached is not None:
            return ProbeResult(cached, cached=True)
    try:
        result = await conn.run(target.command([python, "-c", payload_code()], env), timeout=timeout)
        data = _parse_output(result.stdout, where)
        found = data.get("version")
        exact = found if isinstance(found, str) and found.strip() else version
        if exact is None:
            raise ValueError("the interpreter has no SGLang version")
        parse_version(exact)
        table = table_from_rows(data["rows"], exact)
    except Exception as exc:
        reason = " ".join(str(exc).split())[:300] or type(exc).__name__
        problem = (
            f"could not read SGLang's flags from {shlex.quote(python)} on {where} ({reason}); "
            f"using the {fallback.label} table"
        )
        return ProbeResult(fallback, problem=problem)
    if use_cache and exact is not None:
        _write_cache(cache_path(host, target, python, exact, cache_root), exact, data["rows"])
    return ProbeResult(table)
