"""SGLang launch flags <-> a typed launch spec, per SGLang version.

The flag table (`sglang_flags.json`, produced by `tools/extract_sglang_flags.py` from the 0.5.9, 0.5.11
and 0.5.23 wheels) is what SGLang's own argparse parser holds. Parsing here follows argparse's rules
(unique-prefix abbreviations, `--flag=value`, nargs lists, negative numbers as values) so that what sgtui
accepts is what `python -m sglang.launch_server` accepts, and explains itself where SGLang would not.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from functools import cache
from pathlib import Path
from typing import Any

from sgtui.core.errors import UserError

VERSIONS: tuple[str, ...] = ("0.5.9", "0.5.11", "0.5.23")
GROUPS: tuple[str, ...] = (
    "model",
    "memory",
    "parallelism",
    "speculative decoding",
    "hybrid/Mamba",
    "scheduling",
    "server",
    "other",
)
TABLE_PATH = Path(__file__).with_name("sglang_flags.json")


@dataclass(frozen=True)
class LaunchSpec:
    """The flags that decide memory and startup behaviour, typed and with SGLang's defaults left as None
    where SGLang itself picks a default later (so the fit engine can tell "unset" from "set")."""

    model_path: str | None = None
    tp_size: int = 1
    dp_size: int = 1
    pp_size: int = 1
    enable_dp_attention: bool = False
    mem_fraction_static: float | None = None
    context_length: int | None = None
    max_running_requests: int | None = None
    max_total_tokens: int | None = None
    page_size: int | None = None
    chunked_prefill_size: int | None = None
    max_prefill_tokens: int = 16384
    cuda_graph_max_bs: int | None = None
    disable_cuda_graph: bool = False
    enable_piecewise_cuda_graph: bool = False
    disable_piecewise_cuda_graph: bool = False
    enable_torch_compile: bool = False
    kv_cache_dtype: str = "auto"
    dtype: str = "auto"
    quantization: str | None = None
    attention_backend: str | None = None
    speculative_algorithm: str | None = None  # canonical upper-case; NEXTN stays NEXTN (alias of EAGLE)
    speculative_num_steps: int | None = None
    speculative_eagle_topk: int | None = None
    speculative_num_draft_tokens: int | None = None
    speculative_draft_model_path: str | None = None
    mamba_strategy: str | None = None  # --mamba-scheduler-strategy (<=0.5.11) / --mamba-radix-cache-strategy
    mamba_ssm_dtype: str | None = None
    max_mamba_cache_size: int | None = None
    mamba_full_memory_ratio: float = 0.9
    swa_full_tokens_ratio: float = 0.8
    disable_hybrid_swa_memory: bool = False
    disable_radix_cache: bool = False
    disable_overlap_schedule: bool = False
    enable_hierarchical_cache: bool = False
    language_only: bool = False
    host: str = "127.0.0.1"
    port: int = 30000
    attn_dp_size: int | None = None  # 0.5.23 --attn-dp-size: DP attention groups (implies DP attention)
    values: dict[str, Any] = field(default_factory=dict)  # every flag given: canonical dashed name -> value


# --- the flag table ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FlagVersion:
    """How one SGLang version defines a flag."""

    options: tuple[str, ...]
    kind: str  # str | int | float | human_int | json | bool | bool_optional
    nargs: str | None  # None (one value), "+", "*", "?"
    choices: tuple[Any, ...] | None
    default: Any
    deprecated: bool = False
    new_flag: str | None = None
    removed_message: str | None = None


@dataclass(frozen=True)
class Flag:
    """One `sglang.launch_server` flag across versions, under its newest canonical dashed name."""

    name: str
    dest: str
    group: str
    help: str
    per_version: Mapping[str, FlagVersion]

    @property
    def versions(self) -> tuple[str, ...]:
        return tuple(v for v in VERSIONS if v in self.per_version)

    def info(self, version: str | None = None) -> FlagVersion:
        """The definition in `version`'s family, or the newest one that knows the flag."""
        if version is not None and version in self.per_version:
            return self.per_version[version]
        return self.per_version[self.versions[-1]]

    @property
    def kind(self) -> str:
        return self.info().kind

    @property
    def is_store_true(self) -> bool:
        return self.kind == "bool"

    @property
    def aliases(self) -> tuple[str, ...]:
        seen = {self.name}
        out: list[str] = []
        for info in self.per_version.values():
            for option in info.options:
                if option not in seen:
                    seen.add(option)
                    out.append(option)
        return tuple(out)


@dataclass(frozen=True)
class Rename:
    """A flag SGLang renamed between versions (or replaced with its nearest successor)."""

    old: str
    new: str
    why: str = ""


RENAMES: tuple[Rename, ...] = (
    Rename("--mamba-scheduler-strategy", "--mamba-radix-cache-strategy"),
    Rename("--cuda-graph-max-bs", "--cuda-graph-max-bs-decode"),
    Rename("--cuda-graph-bs", "--cuda-graph-bs-decode"),
    Rename(
        "--disable-piecewise-cuda-graph",
        "--disable-prefill-cuda-graph",
        "the piecewise prefill graph became the breakable prefill graph",
    ),
)

# Speculative algorithms SGLang runs as another one (NEXTN is EAGLE with the model's own MTP layers).
SPECULATIVE_ALIASES: dict[str, str] = {"NEXTN": "EAGLE"}


def speculative_base(algorithm: str | None) -> str | None:
    """The algorithm SGLang actually runs: "nextn" -> "EAGLE"; None when speculative decoding is off."""
    if not algorithm:
        return None
    upper = algorithm.upper()
    return SPECULATIVE_ALIASES.get(upper, upper)


def _load_table() -> dict[str, Flag]:
    raw = json.loads(TABLE_PATH.read_text())
    table: dict[str, Flag] = {}
    for name, entry in raw["flags"].items():
        per_version = {
            version: FlagVersion(
                options=tuple(info["options"]),
                kind=info["kind"],
                nargs=info["nargs"],
                choices=tuple(info["choices"]) if info["choices"] else None,
                default=info["default"],
                deprecated=bool(info.get("deprecated")),
                new_flag=info.get("new_flag"),
                removed_message=info.get("error_message"),
            )
            for version, info in entry["versions"].items()
        }
        table[name] = Flag(name, entry["dest"], entry["group"], entry["help"], per_version)
    return table


FLAGS: dict[str, Flag] = _load_table()


@cache
def _option_index(version: str | None) -> dict[str, str]:
    """Option string -> canonical name, for the options `version` knows (all versions when None)."""
    index: dict[str, str] = {}
    for flag in FLAGS.values():
        for v, info in flag.per_version.items():
            if version is None or v == version:
                for option in info.options:
                    index.setdefault(option, flag.name)
    return index


def version_family(version: str | None) -> str | None:
    """Map a version string ("0.5.10.post1", "v0.5.11rc2") to the nearest family sgtui has a table for.

    Ties go to the older family: flags rarely disappear, so the older table is the safer guess.
    """
    if version is None:
        return None
    match = re.match(r"^\s*v?(\d+)\.(\d+)(?:\.(\d+))?", str(version))
    if not match:
        raise UserError(
            f"SGLang version {version!r} is not a version number; use one like 0.5.11 "
            f"(sgtui knows {', '.join(VERSIONS)})"
        )
    wanted = tuple(int(part or 0) for part in match.groups())

    def distance(family: str) -> tuple[int, int]:
        fam = tuple(int(p) for p in family.split("."))
        major_minor = abs((fam[0] - wanted[0]) * 1000 + (fam[1] - wanted[1]))
        return (major_minor, abs(fam[2] - wanted[2]) if major_minor == 0 else 0)

    best = min(VERSIONS, key=lambda fam: (distance(fam), VERSIONS.index(fam)))
    if distance(best)[0] > 0:
        older = [fam for fam in VERSIONS if tuple(int(p) for p in fam.split(".")) <= wanted]
        best = older[-1] if older else VERSIONS[0]
    return best


def flag_for(name: str) -> Flag:
    """The flag an exact option string (canonical or alias) names; FlagError otherwise."""
    canonical = _option_index(None).get(name)
    if canonical is None:
        raise unknown_flag_error(name, None)
    return FLAGS[canonical]


# --- errors --------------------------------------------------------------------------------------------


class FlagError(UserError):
    """A flag or value SGLang would reject; `.flag` and `.suggestions` let the UI point at the fix."""

    def __init__(self, message: str, *, flag: str | None = None, suggestions: Iterable[str] = ()) -> None:
        super().__init__(message)
        self.flag = flag
        self.suggestions = list(suggestions)


def _rename_partner(name: str) -> Rename | None:
    return next((r for r in RENAMES if name in (r.old, r.new)), None)


def unknown_flag_error(option: str, version: str | None) -> FlagError:
    """The most useful thing to say about an option `version` does not know."""
    union = _option_index(None)
    if version is not None and option in union:
        flag = FLAGS[union[option]]
        rename = _rename_partner(flag.name)
        if rename is not None:
            other = rename.old if flag.name == rename.new else rename.new
            if other in FLAGS and version in FLAGS[other].per_version:
                known = "/".join(flag.versions)
                why = f" ({rename.why})" if rename.why else ""
                return FlagError(
                    f"{option} is the {known} name; SGLang {version} calls it {other}{why}",
                    flag=option,
                    suggestions=[other],
                )
        knows = "knows" if len(flag.versions) == 1 else "know"
        return FlagError(
            f"{option} is not a flag of SGLang {version}; only SGLang {', '.join(flag.versions)} {knows} it",
            flag=option,
        )
    pool = list(_option_index(version))
    stem = option.split("=", 1)[0]
    near = difflib.get_close_matches(stem, pool, n=3, cutoff=0.6)
    where = f"SGLang {version}" if version else "any SGLang version sgtui knows"
    hint = f"; did you mean {', '.join(near)}?" if near else "; check `python -m sglang.launch_server --help`"
    return FlagError(f"unknown flag {stem}: not a flag of {where}{hint}", flag=stem, suggestions=near)


# --- values --------------------------------------------------------------------------------------------

# Ranges SGLang enforces (or that only make sense) for the flags the memory model reads.
_RANGES: dict[str, tuple[float | None, float | None, bool]] = {
    # name: (low, high, low_exclusive)
    "--mem-fraction-static": (0.0, 1.0, True),
    "--mamba-full-memory-ratio": (0.0, None, True),
    "--swa-full-tokens-ratio": (0.0, 1.0, True),
    "--tp-size": (1, None, False),
    "--dp-size": (1, None, False),
    "--pp-size": (1, None, False),
    "--attn-dp-size": (1, None, False),
    "--port": (1, 65535, False),
    "--context-length": (1, None, False),
    "--max-running-requests": (1, None, False),
    "--max-total-tokens": (1, None, False),
    "--page-size": (1, None, False),
    "--max-prefill-tokens": (1, None, False),
    "--cuda-graph-max-bs": (1, None, False),
    "--cuda-graph-max-bs-decode": (1, None, False),
    "--speculative-num-steps": (1, None, False),
    "--speculative-eagle-topk": (1, None, False),
    "--speculative-num-draft-tokens": (1, None, False),
    "--max-mamba-cache-size": (1, None, False),
}

# Flags SGLang declares as plain strings but later reads with json.loads.
JSON_TEXT_FLAGS = frozenset({"--json-model-override-args", "--speculative-token-map-json"}) & set(FLAGS)

_HUMAN_INT = re.compile(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)")
_SI = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
_IEC = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


def _describe(flag: Flag, info: FlagVersion) -> str:
    """What a flag takes, in words, for error messages."""
    if info.choices:
        return "one of " + ", ".join(str(c) for c in info.choices)
    low, high, exclusive = _RANGES.get(flag.name, (None, None, False))
    noun = {
        "int": "a whole number",
        "human_int": "a whole number (k/M/Ki/Mi suffixes allowed)",
        "float": "a number",
        "json": "a JSON value",
        "str": "a text value",
    }.get(info.kind, "a value")
    if low is not None and high is not None:
        return f"{noun} between {_num(low)} and {_num(high)}"
    if low is not None:
        return f"{noun} {'above' if exclusive else 'of at least'} {_num(low)}"
    return noun


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _bad(flag: Flag, info: FlagVersion, given: Any, option: str | None = None) -> FlagError:
    shown = option or flag.name
    return FlagError(f"{shown}: {given!r} is not {_describe(flag, info)}", flag=shown)


def _parse_scalar(flag: Flag, info: FlagVersion, raw: Any, option: str | None = None) -> Any:
    """One value, from text (argv) or an already-typed Python value (config mapping, UI form)."""
    kind = "json" if flag.name in JSON_TEXT_FLAGS else info.kind
    value: Any
    if kind in ("int", "human_int"):
        if isinstance(raw, bool):
            raise _bad(flag, info, raw, option)
        if isinstance(raw, int):
            value = raw
        elif isinstance(raw, str):
            text = raw.strip()
            match = _HUMAN_INT.fullmatch(text) if kind == "human_int" else None
            if match:
                number, suffix = match.groups()
                if suffix in _IEC and "." in number:
                    raise _bad(flag, info, raw, option)
                value = int(float(number) * _SI[suffix]) if suffix in _SI else int(number) * _IEC[suffix]
            else:
                try:
                    value = int(text)
                except ValueError:
                    raise _bad(flag, info, raw, option) from None
        else:
            raise _bad(flag, info, raw, option)
    elif kind == "float":
        if isinstance(raw, bool):
            raise _bad(flag, info, raw, option)
        try:
            value = float(raw)
        except (TypeError, ValueError):
            raise _bad(flag, info, raw, option) from None
        if not math.isfinite(value):
            raise _bad(flag, info, raw, option)
    elif kind == "json":
        if isinstance(raw, (dict, list)):
            value = json.dumps(raw)
        elif isinstance(raw, str):
            try:
                json.loads(raw)
            except ValueError:
                raise FlagError(
                    f"{option or flag.name}: {raw!r} is not valid JSON", flag=option or flag.name
                ) from None
            value = raw
        else:
            raise _bad(flag, info, raw, option)
    else:
        if isinstance(raw, (dict, list)):
            value = json.dumps(raw)  # SGLang reads nested config mappings as JSON strings
        elif isinstance(raw, bool):
            value = str(raw).lower()
        elif isinstance(raw, (int, float, str)):
            value = str(raw)
        else:
            raise _bad(flag, info, raw, option)
    if info.choices and value not in info.choices:
        shown = option or flag.name
        folded = {str(c).lower(): c for c in info.choices}
        exact = folded.get(str(value).lower())
        hint = f"; SGLang's choices are case-sensitive: use {exact}" if exact is not None else ""
        raise FlagError(
            f"{shown}: {raw!r} is not {_describe(flag, info)}{hint}",
            flag=shown,
            suggestions=[str(exact)] if exact is not None else [],
        )
    low, high, exclusive = _RANGES.get(flag.name, (None, None, False))
    if isinstance(value, (int, float)) and low is not None:
        too_low = value <= low if exclusive else value < low
        too_high = high is not None and value > high
        if too_low or too_high:
            raise _bad(flag, info, raw, option)
    return value


def _truthy(raw: Any, flag: Flag, option: str | None) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    shown = option or flag.name
    raise FlagError(f"{shown}: {raw!r} is not true or false", flag=shown)


def coerce_value(name: str, raw: Any, version: str | None = None) -> Any:
    """Type a value for a canonical flag the way SGLang would read it (lists for nargs flags)."""
    flag = FLAGS[name]
    info = flag.info(version_family(version))
    if info.kind in ("bool", "bool_optional"):
        return _truthy(raw, flag, None)
    if info.nargs in ("+", "*"):
        items = raw if isinstance(raw, (list, tuple)) else [raw]
        if info.nargs == "+" and not items:
            raise FlagError(f"{name}: needs at least one value ({_describe(flag, info)})", flag=name)
        return [_parse_scalar(flag, info, item) for item in items]
    if info.nargs == "?" and raw in (None, ""):
        return ""
    return _parse_scalar(flag, info, raw)


# --- argv parsing --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ParsedFlags:
    spec: LaunchSpec
    values: dict[str, Any]
    notes: list[str]


def _resolve_option(option: str, version: str | None, notes: list[str]) -> tuple[Flag, str]:
    """Exact option string, else a unique prefix as argparse allows; returns (flag, option as matched)."""
    index = _option_index(version)
    if option in index:
        return FLAGS[index[option]], option
    if option.startswith("--") and len(option) > 2:
        matches: dict[str, str] = {}
        for candidate, canonical in index.items():
            if candidate.startswith(option):
                matches.setdefault(canonical, candidate)
        known_elsewhere = version is not None and option in _option_index(None)
        if len(matches) == 1:
            canonical, candidate = next(iter(matches.items()))
            if known_elsewhere:
                notes.append(
                    f"{option} is not a flag of SGLang {version}, which reads it as an abbreviation of "
                    f"{candidate}; check that this is what you mean"
                )
                return FLAGS[canonical], candidate
            notes.append(
                f"{option} resolved to {candidate} (an abbreviation SGLang accepts); the full name is safer, "
                "since a newer SGLang may add a flag that makes it ambiguous"
            )
            return FLAGS[canonical], candidate
        if len(matches) > 1 and not known_elsewhere:
            names = sorted(matches.values())
            raise FlagError(
                f"{option} is ambiguous: it could be {', '.join(names)}; write the full name",
                flag=option,
                suggestions=names,
            )
    raise unknown_flag_error(option, version)


def _takes_value_token(token: str) -> bool:
    return not token.startswith("-") or bool(_NEGATIVE_NUMBER.match(token)) or token == "-"


def parse_argv(argv: list[str], version: str | None = None) -> ParsedFlags:
    """Parse `sglang.launch_server` arguments; `version=None` accepts any flag some version knows."""
    family = version_family(version)
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
        flag, matched = _resolve_option(option, family, notes)
        info = flag.info(family)
        if info.removed_message:
            raise FlagError(f"{matched}: {info.removed_message}", flag=matched)
        if info.deprecated:
            instead = f"; use {info.new_flag} instead" if info.new_flag else ""
            notes.append(f"{matched} is deprecated in SGLang {family or flag.versions[-1]}{instead}")
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
    return ParsedFlags(spec=spec_from_values(values, family), values=values, notes=notes)


def spelling(flag: Flag, version: str | None = None) -> str:
    """The option string to write for `flag`: its canonical name, or the name `version` knows it by
    (0.5.11 knows `--smg-http-sidecar-port` only as `--grpc-http-sidecar-port`)."""
    info = flag.info(version_family(version))
    return flag.name if flag.name in info.options else info.options[0]


def to_argv(values: Mapping[str, Any], version: str | None = None) -> list[str]:
    """Arguments for `sglang.launch_server`; store_true flags that are False are left out."""
    argv: list[str] = []
    for name, value in values.items():
        if value is None:
            continue
        flag = flag_for(name)
        info = flag.info(version_family(version))
        option = spelling(flag, version)
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


# --- typed spec ----------------------------------------------------------------------------------------

_SPEC_FIELDS: dict[str, str] = {
    "--model-path": "model_path",
    "--tp-size": "tp_size",
    "--dp-size": "dp_size",
    "--pp-size": "pp_size",
    "--enable-dp-attention": "enable_dp_attention",
    "--attn-dp-size": "attn_dp_size",
    "--mem-fraction-static": "mem_fraction_static",
    "--context-length": "context_length",
    "--max-running-requests": "max_running_requests",
    "--max-total-tokens": "max_total_tokens",
    "--page-size": "page_size",
    "--chunked-prefill-size": "chunked_prefill_size",
    "--max-prefill-tokens": "max_prefill_tokens",
    "--cuda-graph-max-bs": "cuda_graph_max_bs",
    "--cuda-graph-max-bs-decode": "cuda_graph_max_bs",
    "--disable-cuda-graph": "disable_cuda_graph",
    "--disable-decode-cuda-graph": "disable_cuda_graph",
    "--enable-piecewise-cuda-graph": "enable_piecewise_cuda_graph",
    "--disable-piecewise-cuda-graph": "disable_piecewise_cuda_graph",
    "--disable-prefill-cuda-graph": "disable_piecewise_cuda_graph",
    "--enable-torch-compile": "enable_torch_compile",
    "--kv-cache-dtype": "kv_cache_dtype",
    "--dtype": "dtype",
    "--quantization": "quantization",
    "--attention-backend": "attention_backend",
    "--speculative-algorithm": "speculative_algorithm",
    "--speculative-num-steps": "speculative_num_steps",
    "--speculative-eagle-topk": "speculative_eagle_topk",
    "--speculative-num-draft-tokens": "speculative_num_draft_tokens",
    "--speculative-draft-model-path": "speculative_draft_model_path",
    "--mamba-scheduler-strategy": "mamba_strategy",
    "--mamba-radix-cache-strategy": "mamba_strategy",
    "--mamba-ssm-dtype": "mamba_ssm_dtype",
    "--max-mamba-cache-size": "max_mamba_cache_size",
    "--mamba-full-memory-ratio": "mamba_full_memory_ratio",
    "--swa-full-tokens-ratio": "swa_full_tokens_ratio",
    "--disable-hybrid-swa-memory": "disable_hybrid_swa_memory",
    "--disable-radix-cache": "disable_radix_cache",
    "--disable-overlap-schedule": "disable_overlap_schedule",
    "--enable-hierarchical-cache": "enable_hierarchical_cache",
    "--language-only": "language_only",
    "--host": "host",
    "--port": "port",
}
_SPEC_TYPES = {f.name: f for f in fields(LaunchSpec)}


def canonical_name(key: str) -> str:
    """A dashed or underscored flag name (with or without leading dashes) -> its canonical dashed name."""
    option = "--" + key.lstrip("-").replace("_", "-")
    return flag_for(option).name


def spec_from_values(values: Mapping[str, Any], version: str | None = None) -> LaunchSpec:
    """A LaunchSpec from canonical-name values (as `parse_argv` or a profile gives them).

    Values are checked and typed again, so a mapping built by hand (the UI form) gets the same errors
    as argv. Keys may be aliases; `values` on the spec keeps them under canonical names. A None value
    means "not set" and is dropped.
    """
    family = version_family(version)
    typed: dict[str, Any] = {}
    for key, raw in values.items():
        if raw is None:
            continue
        name = canonical_name(key)
        flag = FLAGS[name]
        if family is not None and family not in flag.per_version:
            raise unknown_flag_error(name, family)
        typed[name] = coerce_value(name, raw, family)
    kwargs: dict[str, Any] = {}
    for name, value in typed.items():
        attr = _SPEC_FIELDS.get(name)
        if attr is None:
            continue
        if attr in ("disable_cuda_graph", "disable_piecewise_cuda_graph", "enable_dp_attention"):
            kwargs[attr] = kwargs.get(attr, False) or bool(value)
        else:
            kwargs[attr] = value
    if typed.get("--cuda-graph-backend-decode") == "disabled":
        kwargs["disable_cuda_graph"] = True
    if typed.get("--cuda-graph-backend-prefill") == "disabled":
        kwargs["disable_piecewise_cuda_graph"] = True
    if (kwargs.get("attn_dp_size") or 1) > 1:
        kwargs["enable_dp_attention"] = True
    algorithm = kwargs.get("speculative_algorithm")
    if isinstance(algorithm, str):
        kwargs["speculative_algorithm"] = algorithm.upper()
    for attr, value in list(kwargs.items()):
        if value is None and _SPEC_TYPES[attr].default is not None:
            del kwargs[attr]  # a None for a field SGLang defaults (e.g. --kv-cache-dtype) keeps the default
    return LaunchSpec(**kwargs, values=typed)


# --- SGLang's --config YAML format ---------------------------------------------------------------------


def resolve_config_key(key: Any, version: str | None = None) -> Flag:
    """The flag a `--config` key names (dashes or underscores, as SGLang 0.5.23 reads them)."""
    if not isinstance(key, str) or not key.strip("-"):
        raise FlagError(f"config key {key!r} is not a flag name", flag=str(key))
    family = version_family(version)
    index = _option_index(family)
    for option in ("--" + key.lstrip("-"), "--" + key.lstrip("-").replace("_", "-")):
        if option in index:
            return FLAGS[index[option]]
    raise unknown_flag_error("--" + key.lstrip("-").replace("_", "-"), family)


def from_config_mapping(mapping: Mapping[str, Any], version: str | None = None) -> dict[str, Any]:
    """Values from a mapping in SGLang's `--config` format: dashed or underscored keys, `true` for
    switches (false leaves them off), lists for nargs flags, nested mappings as JSON text."""
    family = version_family(version)
    values: dict[str, Any] = {}
    for key, raw in mapping.items():
        flag = resolve_config_key(key, family)
        option = "--" + str(key).lstrip("-")
        info = flag.info(family)
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
        values[flag.name] = coerce_value(flag.name, raw, family)
    return values


def to_config_mapping(values: Mapping[str, Any], version: str | None = None) -> dict[str, Any]:
    """A mapping SGLang's `--config` loader turns back into the same argv (dashed keys; JSON as text,
    since SGLang before 0.5.23 would pass a nested mapping through `str()`, which is not JSON)."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        if value is None:
            continue
        flag = flag_for(name)
        key = spelling(flag, version).removeprefix("--")
        if flag.info(version_family(version)).kind == "bool":
            if value:
                out[key] = True
        elif isinstance(value, list):
            out[key] = list(value)
        else:
            out[key] = value
    return out
