"""Extract the `sglang.launch_server` flag table from unpacked SGLang wheels into sgtui's data file.

SGLang builds its parser in code (0.5.23 derives it from annotated dataclasses), so reading the source
text misses choices and defaults computed at import time. Instead this script imports each version's
`ServerArgs` with every heavy dependency (torch, transformers, kernels) replaced by an inert stub, runs
`ServerArgs.add_cli_args` into a plain argparse parser, and records what argparse holds.

Usage (the interpreter needs msgspec, typing_extensions and pyyaml, which SGLang's arg modules import):

    pip download --no-deps sglang==0.5.9 -d /tmp/w
    unzip -q /tmp/w/sglang-0.5.9-*.whl 'sglang/*' -d /tmp/s059
    python tools/extract_sglang_flags.py 0.5.9=/tmp/s059 0.5.11=/tmp/s0511 0.5.23=/tmp/s0523 \
        -o sgtui/core/sglang_flags.json

Each VERSION=DIR names a folder that holds the unpacked `sglang/` package.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

# Heavy or side-effectful SGLang subpackages the parser does not need; they are stubbed like torch.
STUBBED_SGLANG = (
    "sglang.srt.configs",
    "sglang.kernels",
    "sglang.jit_kernel",
    "sglang.srt.models",
    "sglang.srt.managers",
    "sglang.srt.layers",
    "sglang.srt.utils.hf_transformers_patches",
    "sglang.srt.lora",
    "sglang.srt.model_executor",
    "sglang.srt.distributed",
    "sglang.srt.mem_cache",
)
REAL_TOP_LEVEL = {"sglang", "yaml", "msgspec", "typing_extensions"}

# Groups in the order the form shows them; the first matching rule wins.
GROUP_RULES: list[tuple[str, tuple[str, ...]]] = [
    ("hybrid/Mamba", ("mamba", "linear_attn", "swa", "hybrid")),
    ("speculative decoding", ("speculative", "spec_", "eagle", "ngram", "draft")),
    (
        "parallelism",
        (
            "tp_size",
            "dp_size",
            "pp_size",
            "ep_size",
            "dp_attention",
            "nnodes",
            "node_rank",
            "^dist_",
            "_parallel",
            "moe_a2a",
            "moe_dense_tp",
            "attn_cp",
            "load_balance_method",
            "nccl",
            "base_gpu_id",
            "gpu_id_step",
            "enable_dp_lm_head",
            "cp_size",
            "moe_runner",
            r"(^|_)ep_",
            "deepep",
            "eplb",
        ),
    ),
    (
        "memory",
        (
            "mem_fraction",
            "max_total_tokens",
            "kv_cache",
            "page_size",
            "cuda_graph",
            "piecewise",
            "torch_compile",
            "hierarchical_cache",
            "hicache",
            "radix",
            "cpu_offload",
            "memory",
            "offload",
            "max_prefill_tokens",
            "chunked_prefill",
            "allow_auto_truncate",
            "prefill_graph",
            "breakable",
        ),
    ),
    (
        "model",
        (
            "model_path",
            "tokenizer",
            "revision",
            "load_format",
            "trust_remote_code",
            "dtype",
            "quantization",
            "context_length",
            "served_model_name",
            "chat_template",
            "completion_template",
            "is_embedding",
            "skip_tokenizer_init",
            "reasoning_parser",
            "tool_call_parser",
            "model_loader",
            "modelopt",
            "language_only",
            "json_model_override_args",
            "preferred_sampling_params",
            "attention_backend",
            "sampling_backend",
            "grammar_backend",
            "model_impl",
            "weight",
            "^hf_",
            "download_dir",
            "(^|_)mm_",
            "multimodal",
        ),
    ),
    (
        "scheduling",
        (
            "schedule",
            "max_running_requests",
            "max_queued_requests",
            "overlap",
            "priority",
            "stream_interval",
            "prefill",
            "decode",
            "batch",
            "num_continuous_decode_steps",
            "enable_mixed_chunk",
        ),
    ),
    (
        "server",
        (
            "host",
            "port",
            "api_key",
            "log_",
            "enable_metrics",
            "ssl",
            "cors",
            "admin",
            "uvicorn",
            "health",
            "watchdog",
            "timeout",
            "tokenizer_worker_num",
            "crash_dump",
            "enable_trace",
            "otlp",
            "prometheus",
            "collect_tokens_histogram",
            "file_storage_path",
            "decrypted",
            "warmup",
        ),
    ),
]


def classify(dest: str) -> str:
    """A coarse help group from the dest name; the UI uses it to sort the form, nothing depends on it.

    Needles are regular expressions searched in the dest (`(^|_)ep_` so that `sleep_on_idle` is not EP).
    """
    for group, needles in GROUP_RULES:
        if any(re.search(needle, dest) for needle in needles):
            return group
    return "other"


def _install_stubs(root: str) -> None:
    import importlib.abc
    import importlib.machinery
    import types

    class _Meta(type):
        def __getattr__(cls, name: str) -> Any:
            if name.startswith("__") and name.endswith("__"):
                raise AttributeError(name)
            return _Stub

        def __getitem__(cls, key: Any) -> Any:
            return _Stub

        def __iter__(cls) -> Any:
            return iter(())

        def __or__(cls, other: Any) -> Any:
            return _Stub

        def __ror__(cls, other: Any) -> Any:
            return _Stub

        def __call__(cls, *args: Any, **kwargs: Any) -> Any:
            if len(args) == 1 and callable(args[0]) and not kwargs:
                return args[0]  # used as a decorator
            return _Stub

        def __bool__(cls) -> bool:
            return False

        def __len__(cls) -> int:
            return 0

        def __int__(cls) -> int:
            return 0

        def __index__(cls) -> int:
            return 0

        def __lt__(cls, other: Any) -> bool:
            return False

        __gt__ = __le__ = __ge__ = __lt__

        def __mro_entries__(cls, bases: Any) -> tuple[type, ...]:
            return (object,)

        def __enter__(cls) -> Any:
            return _Stub

        def __exit__(cls, *exc: Any) -> bool:
            return False

    class _Stub(metaclass=_Meta):
        pass

    class StubModule(types.ModuleType):
        def __getattr__(self, name: str) -> Any:
            if name.startswith("__") and name.endswith("__"):
                raise AttributeError(name)
            return _Stub

    class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
            stubbed = any(name == p or name.startswith(p + ".") for p in STUBBED_SGLANG)
            top = name.split(".")[0]
            if not stubbed and (top in REAL_TOP_LEVEL or top in sys.stdlib_module_names):
                return None
            return importlib.machinery.ModuleSpec(name, self, is_package=True)

        def create_module(self, spec: Any) -> Any:
            module = StubModule(spec.name)
            module.__path__ = []
            module.__version__ = "2.9.0"
            return module

        def exec_module(self, module: Any) -> None:
            pass

    sys.path.insert(0, root)
    sys.meta_path.insert(0, Finder())
    globals()["_STUB_TYPE"] = _Stub


def _jsonable(value: Any) -> Any:
    stub = globals().get("_STUB_TYPE")
    if value is stub or isinstance(value, type):
        return None
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if hasattr(value, "value") and isinstance(value.value, (str, int)):  # enums
        return value.value
    return str(value)


KIND_BY_TYPE = {
    "str": "str",
    "int": "int",
    "float": "float",
    "loads": "json",
    "json_list_type": "json",
    "human_readable_int": "human_int",
    "nullable_str": "str",
}


def dump_version(root: str) -> list[dict[str, Any]]:
    """Run in a child process: the stubs poison sys.modules for anything else."""
    _install_stubs(root)
    from sglang.srt.server_args import ServerArgs  # type: ignore[import-not-found]

    parser = argparse.ArgumentParser(add_help=False)
    ServerArgs.add_cli_args(parser)
    rows: list[dict[str, Any]] = []
    for action in parser._actions:
        if not action.option_strings:
            continue
        action_name = type(action).__name__
        type_name = getattr(action.type, "__name__", None)
        nargs = action.nargs
        if action_name == "_StoreTrueAction":
            kind = "bool"
        elif action_name == "_StoreFalseAction":
            kind = "bool_false"
        elif action_name == "BooleanOptionalAction":
            kind = "bool_optional"
        elif (
            action_name in ("DeprecatedAction", "DeprecatedStoreTrueAction")
            or (action_name == "DeprecatedStoreConstAction" and nargs == 0)
            or action_name == "_StoreConstAction"
        ):
            kind = "bool"
        else:
            kind = KIND_BY_TYPE.get(type_name or "str", "str")
        if nargs == 0:
            nargs = None
        choices = None
        if action.choices is not None:
            listed = action.choices
            if isinstance(
                listed, (set, frozenset)
            ):  # set order changes with hash seeds: keep the file stable
                listed = sorted(listed, key=str)
            choices = _jsonable(list(listed))
        row = {
            "options": list(action.option_strings),
            "dest": action.dest,
            "kind": kind,
            "nargs": nargs if nargs in (None, "+", "*", "?") else str(nargs),
            "choices": choices or None,
            "default": _jsonable(action.default),
            "help": " ".join((action.help or "").split()),
        }
        if action_name.startswith("Deprecated"):
            row["deprecated"] = True
            new_flag = getattr(action, "new_flag", None)
            if new_flag:
                row["new_flag"] = new_flag
            message = getattr(action, "error_message", None)
            if message:
                row["error_message"] = message
                row["removed"] = True
        rows.append(row)
    return rows


def merge(per_version: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """One entry per flag keyed by its newest canonical name; each version keeps its own details.

    Rows from different versions are the same flag when they share any option string (0.5.9 spells
    tensor parallelism `--tensor-parallel-size` first, 0.5.23 `--tp-size`, both accept both).
    """
    versions = list(per_version)
    entries: list[dict[str, Any]] = []
    owner: dict[str, dict[str, Any]] = {}
    for version in versions:
        for row in per_version[version]:
            entry = next((owner[o] for o in row["options"] if o in owner), None)
            if entry is None or version in entry["versions"]:
                entry = {"versions": {}, "help": ""}
                entries.append(entry)
            for option in row["options"]:
                owner[option] = entry
            entry["versions"][version] = {
                "options": row["options"],
                "kind": row["kind"],
                "nargs": row["nargs"],
                "choices": row["choices"],
                "default": row["default"],
                **{k: row[k] for k in ("deprecated", "new_flag", "error_message", "removed") if k in row},
            }
            entry["help"] = row["help"] or entry["help"]
            entry["dest"] = row["dest"]
    flags: dict[str, Any] = {}
    for entry in entries:
        newest = entry["versions"][next(v for v in reversed(versions) if v in entry["versions"])]
        name = newest["options"][0]
        if name in flags:
            raise SystemExit(f"two flags share the canonical name {name}")
        flags[name] = {
            "dest": entry["dest"],
            "group": classify(entry["dest"]),
            "help": entry["help"],
            "versions": entry["versions"],
        }
    return {"versions": versions, "flags": dict(sorted(flags.items()))}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("sources", nargs="*", metavar="VERSION=DIR")
    parser.add_argument("-o", "--output", type=Path)
    parser.add_argument("--dump", metavar="DIR", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.dump:
        json.dump(dump_version(args.dump), sys.stdout)
        return 0
    if not args.sources or not args.output:
        parser.error("give VERSION=DIR sources and -o OUTPUT")
    per_version: dict[str, list[dict[str, Any]]] = {}
    for source in args.sources:
        version, _, root = source.partition("=")
        if not root or not (Path(root) / "sglang").is_dir():
            parser.error(f"{source}: expected VERSION=DIR where DIR/sglang is the unpacked package")
        out = subprocess.run(
            [sys.executable, __file__, "--dump", root], check=True, capture_output=True, text=True
        ).stdout
        per_version[version] = json.loads(out)
    table = merge(per_version)
    args.output.write_text(json.dumps(table, indent=1, sort_keys=False) + "\n")
    print(f"{len(table['flags'])} flags from {', '.join(per_version)} -> {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
