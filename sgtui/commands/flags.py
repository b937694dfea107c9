"""`sgtui flags`: the flags an SGLang release has (shipped table, or the target's own), and `--diff A B`:
what was renamed, removed, added or changed between two releases ("why does my old command fail on the
new version?")."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from sgtui.core.errors import UserError

HELP = "list an SGLang release's launch flags, or what changed between two releases (--diff A B)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("match", nargs="?", help="only flags whose name contains this text")
    parser.add_argument("--sglang", metavar="VERSION", help="the release whose shipped table to list")
    parser.add_argument("--profile", help="list the table of the profile's target (read from its SGLang)")
    parser.add_argument("--host", help="read the table on this host (with --python; overrides a profile's)")
    parser.add_argument(
        "--python", metavar="PATH", help="with --host: the interpreter SGLang is installed for"
    )
    parser.add_argument(
        "--target", metavar="KIND:ID", help="with --host: pct:VMID or docker:NAME (default: host)"
    )
    parser.add_argument(
        "--diff", nargs=2, metavar=("A", "B"), help="what changed from release A to release B"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    from sgtui.core.sglang.flags import table_for

    modes = [m for m in ("sglang", "profile", "diff") if getattr(args, m)]
    if args.host and "profile" not in modes:
        modes.append("host")
    if len(modes) != 1:
        raise UserError(
            "give one of --sglang VERSION, --profile P, --host H --python PATH, or --diff A B"
            + (f" (got {', '.join('--' + m for m in modes)})" if modes else "")
        )
    if args.diff:
        from sgtui.core.sglang.flag_diff import diff_tables

        old, new = (table_for(v) for v in args.diff)
        result = diff_tables(old, new)
        _print(result.to_json() if args.json else None, lambda: _print_diff(result, args.match))
        return 0
    if args.sglang:
        table = table_for(args.sglang)
    else:
        import asyncio

        table, problem = asyncio.run(_target_table(args))
        if problem:
            print(f"sgtui flags: {problem}", file=sys.stderr)
    rows = [_row(table, name) for name in sorted(table.names) if not args.match or args.match in name]
    if args.json:
        _print({"version": table.version, "table": table.label, "note": table.note, "flags": rows}, None)
    else:
        _print(None, lambda: _print_list(table, rows))
    return 0


def _print(data: dict[str, Any] | None, text: Any) -> None:
    if data is not None:
        print(json.dumps(data, indent=1, default=str))
    else:
        text()


def _row(table: Any, name: str) -> dict[str, Any]:
    info = table.info(name)
    return {
        "name": name,
        "options": list(info.options),
        "group": table.flag(name).group,
        "kind": info.kind,
        "nargs": info.nargs,
        "choices": list(info.choices) if info.choices else None,
        "default": info.default,
        "deprecated": info.deprecated,
        "use_instead": info.new_flag,
        "stops_with": info.removed_message,
    }


def _print_list(table: Any, rows: list[dict[str, Any]]) -> None:
    print(f"SGLang {table.version}: {len(rows)} flags ({table.label})")
    if table.note:
        print(f"note: {table.note}")
    for group in dict.fromkeys(r["group"] for r in sorted(rows, key=lambda r: r["group"])):
        print(f"\n{group}")
        for r in (r for r in rows if r["group"] == group):
            takes = "" if r["kind"] in ("bool", "bool_optional") else f" {r['kind'].upper()}"
            if r["nargs"] in ("+", "*"):
                takes += " ..."
            extra = []
            if r["choices"]:
                extra.append("{" + ",".join(str(c) for c in r["choices"]) + "}")
            if r["deprecated"]:
                extra.append("deprecated" + (f": use {r['use_instead']}" if r["use_instead"] else ""))
            if r["stops_with"]:
                extra.append(f"stops: {r['stops_with']}")
            aliases = [o for o in r["options"] if o != r["name"]]
            names = r["name"] + (f" ({', '.join(aliases)})" if aliases else "")
            print(f"  {names}{takes}" + (f"  {'; '.join(extra)}" if extra else ""))


def _print_diff(result: Any, match: str | None) -> None:
    def keep(name: str) -> bool:
        return not match or match in name

    old, new = result.old, result.new
    print(f"SGLang {old.version} ({old.label}) -> SGLang {new.version} ({new.label})")
    for table in (old, new):
        if table.note:
            print(f"note: {table.note}")
    sections = [
        ("renamed", [f"{r.old} -> {r.use}" for r in result.renamed if keep(r.old) or keep(r.new)]),
        ("removed", [n + (f": use {u}" if u else "") for n, u in result.removed if keep(n)]),
        ("added", [n for n in result.added if keep(n)]),
        ("deprecated", [f"{n}" + (f": use {u}" if u else "") for n, u in result.deprecated if keep(n)]),
        ("changed", [f"{n}: {'; '.join(what)}" for n, what in result.changed if keep(n)]),
    ]
    for title, lines in sections:
        print(f"\n{title} ({len(lines)})")
        for line in lines:
            print(f"  {line}")


async def _target_table(args: argparse.Namespace) -> tuple[Any, str | None]:
    """The target's own table (or the shipped fallback and the one-line reason)."""
    from sgtui.remote.connection import ConnectionPool, RemoteError
    from sgtui.remote.flag_probe import read_flag_table
    from sgtui.remote.targets import Target, sglang_version

    env: dict[str, str] = {}
    if args.profile:
        from sgtui.commands.launch import resolve_profile_path
        from sgtui.core.profiles import load_profile
        from sgtui.remote.flag_probe import cached_table

        profile = load_profile(resolve_profile_path(args.profile), flag_tables=cached_table)
        host, python, env = args.host or profile.host, args.python or profile.python, dict(profile.env)
        target = Target(profile.target.kind, profile.target.id)
    else:
        if not args.python:
            raise UserError(
                f"--host {args.host}: also give --python PATH, the interpreter SGLang is installed for"
            )
        host, python, target = args.host, args.python, _target(args.target)
    from sgtui.commands.launch import ask_password

    conn = ConnectionPool(password_cb=ask_password if sys.stdin.isatty() else None).get(host)
    try:
        version = await sglang_version(conn, target, python)
        if version is None:
            raise UserError(f"{python} on {host} ({target.label}) has no SGLang installed")
        result = await read_flag_table(conn, target, python, version, env=env)
    except RemoteError as exc:
        raise UserError(str(exc)) from None
    finally:
        await conn.close()
    return result.table, result.problem


def _target(text: str | None) -> Any:
    from sgtui.remote.targets import Target

    if not text:
        return Target()
    kind, _, ident = text.partition(":")
    if kind not in ("host", "pct", "docker") or (kind != "host" and not ident):
        raise UserError(f"--target {text!r}: write pct:VMID, docker:NAME or host")
    return Target(kind, ident or None)  # type: ignore[arg-type]
