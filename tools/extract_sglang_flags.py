"""Build (or check) sgtui's shipped SGLang flag tables from the released wheels.

Each release's table is read by `sgtui/remote/flag_payload.py`, the same code that reads a target's own
table: it imports that release's `ServerArgs` with heavy dependencies stubbed and records what argparse
holds. The tables are stored compactly: one entry per flag with the release ranges where each definition
holds (`sgtui/core/sglang/flag_tables.json`), and the help texts apart (`flag_help.json`, read lazily).

    pip download --no-deps sglang==0.5.14 -d /tmp/sgl/0.5.14
    python tools/extract_sglang_flags.py 0.5.14=/tmp/sgl/0.5.14 ... -o sgtui/core/sglang/flag_tables.json
    python tools/extract_sglang_flags.py --check 0.5.14=/tmp/sgl/0.5.14 ...

A source is VERSION=PATH, PATH being a wheel, a folder holding one wheel, or a folder holding the unpacked
`sglang/` package. Give the releases in any order; they are sorted as versions. The interpreter needs
msgspec and typing_extensions for 0.5.23 and later (SGLang's argument dataclasses import them).

`--check` reads each wheel again and checks the shipped tables against it through sgtui's own parser:
every flag the release has is accepted (a removed flag's own error is kept), its definition matches, and
every flag some other release has but this one lacks is rejected with a message that names the release.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from sgtui.core.sglang.flag_groups import classify  # noqa: E402
from sgtui.core.sglang.versions import parse_version  # noqa: E402

PAYLOAD = REPO / "sgtui" / "remote" / "flag_payload.py"
DEFAULT_OUTPUT = REPO / "sgtui" / "core" / "sglang" / "flag_tables.json"
DEF_KEYS = ("options", "kind", "nargs", "choices", "default", "deprecated", "new_flag", "error_message")
# Keys left out of a stored definition when they hold these values (keeps the file small).
DEF_DEFAULTS: dict[str, Any] = {
    "kind": "str",
    "nargs": None,
    "choices": None,
    "default": None,
    "deprecated": False,
    "new_flag": None,
    "error_message": None,
}


def _unpacked(path: Path, scratch: Path) -> Path:
    """A folder holding `sglang/` for PATH (a wheel, a folder with one wheel, or already unpacked)."""
    if (path / "sglang").is_dir():
        return path
    wheel = path if path.suffix == ".whl" else next(iter(sorted(path.glob("sglang-*.whl"))), None)
    if wheel is None:
        raise SystemExit(f"{path}: neither an unpacked sglang/ folder nor a folder with an sglang wheel")
    out = scratch / wheel.stem
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(out, [n for n in archive.namelist() if n.startswith("sglang/")])
    return out


def read_rows(root: Path) -> list[dict[str, Any]]:
    """One release's rows, read in a child process (the stubs poison sys.modules for anything else)."""
    proc = subprocess.run(
        [sys.executable, str(PAYLOAD), str(root)], capture_output=True, text=True, timeout=300
    )
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("@@sgtui-flags ")), None)
    if line is None:
        raise SystemExit(f"{root}: the payload printed no table: {proc.stderr.strip()[-300:]}")
    data = json.loads(line.split(" ", 1)[1])
    if "error" in data:
        raise SystemExit(f"{root}: {data['error']}")
    return data["rows"]


def read_all(sources: list[str], jobs: int) -> dict[str, list[dict[str, Any]]]:
    pairs: list[tuple[str, Path]] = []
    for source in sources:
        version, _, path = source.partition("=")
        if not path:
            raise SystemExit(f"{source}: expected VERSION=PATH")
        parse_version(version)
        pairs.append((version, Path(path)))
    pairs.sort(key=lambda pair: parse_version(pair[0]))
    with tempfile.TemporaryDirectory() as scratch, ThreadPoolExecutor(max(1, jobs)) as pool:
        roots = [_unpacked(path, Path(scratch)) for _, path in pairs]
        rows = list(pool.map(read_rows, roots))
    return {version: found for (version, _), found in zip(pairs, rows, strict=True)}


def _definition(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row[k] for k in DEF_KEYS if k in row and row[k] != DEF_DEFAULTS.get(k, ...)}


def merge(per_release: dict[str, list[dict[str, Any]]]) -> tuple[dict[str, Any], dict[str, str]]:
    """The compact table and the help texts.

    Rows of different releases are one flag when they share an option string (0.5.9 spells tensor
    parallelism `--tensor-parallel-size` first, 0.5.23 `--tp-size`; both accept both). A flag is named by
    its newest first option; `spans` are `[first, last, definition]`, consecutive releases (in `releases`
    order) with the same definition folded into one span.
    """
    releases = list(per_release)
    entries: list[dict[str, Any]] = []
    owner: dict[str, dict[str, Any]] = {}
    for release in releases:
        for row in per_release[release]:
            entry = next((owner[o] for o in row["options"] if o in owner), None)
            if entry is None or release in entry["defs"]:
                entry = {"defs": {}, "help": ""}
                entries.append(entry)
            for option in row["options"]:
                owner[option] = entry
            entry["defs"][release] = _definition(row)
            entry["help"] = row["help"] or entry["help"]
            entry["dest"] = row["dest"]
    flags: dict[str, Any] = {}
    helps: dict[str, str] = {}
    for entry in entries:
        newest = entry["defs"][next(r for r in reversed(releases) if r in entry["defs"])]
        name = newest["options"][0]
        if name in flags:
            raise SystemExit(f"two flags share the canonical name {name}")
        spans: list[list[Any]] = []
        previous = -2
        for position, release in enumerate(releases):
            definition = entry["defs"].get(release)
            if definition is None:
                continue
            if spans and previous == position - 1 and spans[-1][2] == definition:
                spans[-1][1] = release
            else:
                spans.append([release, release, definition])
            previous = position
        flags[name] = {"dest": entry["dest"], "group": classify(entry["dest"]), "spans": spans}
        helps[name] = entry["help"]
    table = {"format": 2, "releases": releases, "flags": dict(sorted(flags.items()))}
    return table, dict(sorted(helps.items()))


def write(table: dict[str, Any], helps: dict[str, str], output: Path) -> None:
    output.write_text(json.dumps(table, separators=(",", ":")) + "\n")
    output.with_name("flag_help.json").write_text(json.dumps(helps, indent=0) + "\n")


def _sample_argv(option: str, definition: Any) -> list[str]:
    """One valid use of `option` under `definition` (a value of the right kind)."""
    if definition.kind in ("bool", "bool_optional"):
        return [option]
    if definition.choices:
        value = str(definition.choices[0])
    elif definition.kind in ("int", "human_int"):
        value = "7"
    elif definition.kind == "float":
        value = "0.5"
    elif definition.kind == "json" or option in (
        "--json-model-override-args",
        "--speculative-token-map-json",
    ):
        value = "{}"
    else:
        value = "text"
    return [f"{option}={value}"]


def check_release(release: str, rows: list[dict[str, Any]]) -> tuple[list[str], str]:
    """Problems (empty when the shipped table matches the wheel) and a one-line summary."""
    from sgtui.core.sglang.flags import FlagDef, FlagError, any_table, parse_argv, table_for

    problems: list[str] = []
    table = table_for(release)
    if table.source != "shipped" or table.release != release:
        return [f"no shipped table for {release} ({table.label})"], ""
    seen: set[str] = set()
    accepted = stopped = 0
    for row in rows:
        wanted = FlagDef.from_json(row)
        name = next((table.index[o] for o in wanted.options if o in table.index), None)
        if name is None:
            problems.append(f"{wanted.options[0]}: in the wheel, not in the shipped table")
            continue
        if table.info(name) != wanted:
            problems.append(f"{wanted.options[0]}: shipped {table.info(name)} != wheel {wanted}")
        for option in wanted.options:
            seen.add(option)
            try:
                parse_argv(_sample_argv(option, wanted), release)
                accepted += 1
                if wanted.removed_message:
                    problems.append(f"{option}: the release stops at it, sgtui accepted it")
            except FlagError as err:
                if wanted.removed_message and release in str(err) and wanted.removed_message in str(err):
                    stopped += 1
                else:
                    problems.append(f"{option}: the release has it, sgtui said: {err}")
    extra = set(table.index) - seen
    problems += [f"{option}: in the shipped table, not in the wheel" for option in sorted(extra)]
    rejected = abbreviations = 0
    union = any_table()
    for option in sorted(set(union.index) - seen):
        expands_to = {table.index[o] for o in seen if o.startswith(option)}
        definition = table.info(next(iter(expands_to))) if len(expands_to) == 1 else None
        try:
            parsed = parse_argv(_sample_argv(option, definition or union.info(union.index[option])), release)
            # argparse reads a unique prefix as an abbreviation; sgtui must say so, naming the release
            if definition is not None and any(
                f"SGLang {release}" in note and "abbreviation" in note for note in parsed.notes
            ):
                abbreviations += 1
            else:
                problems.append(f"{option}: the release lacks it, sgtui accepted it ({parsed.notes})")
        except FlagError as err:
            if f"SGLang {release} " not in str(err) + " ":
                problems.append(f"{option}: rejected without naming {release}: {err}")
            else:
                rejected += 1
    summary = (
        f"{accepted} option strings accepted, {stopped} retired ones stop with SGLang's message, "
        f"{rejected} absent ones rejected naming {release}, "
        f"{abbreviations} read as abbreviations (with a note)"
    )
    return problems, summary


def check(per_release: dict[str, list[dict[str, Any]]]) -> int:
    """Compare the shipped tables with what the wheels hold; one line per release, exit 1 on a mismatch."""
    failures = 0
    for release, rows in per_release.items():
        problems, summary = check_release(release, rows)
        print(f"{release}: ok: {summary}" if not problems else f"{release}: {len(problems)} problems")
        for problem in problems[:20]:
            print(f"  {problem}")
        failures += bool(problems)
    return 1 if failures else 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("sources", nargs="+", metavar="VERSION=PATH")
    parser.add_argument("-o", "--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--check", action="store_true", help="check the shipped tables against the wheels")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    args = parser.parse_args()
    per_release = read_all(args.sources, args.jobs)
    if args.check:
        return check(per_release)
    table, helps = merge(per_release)
    write(table, helps, args.output)
    print(f"{len(table['flags'])} flags from {len(per_release)} releases -> {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
