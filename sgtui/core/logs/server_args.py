"""The launch's own settings as a log shows them: the `server_args=ServerArgs(...)` dump (every era's form,
also hard-wrapped over several lines) and launch commands pasted or echoed into the log."""

from __future__ import annotations

import re
from typing import Any

from sgtui.core.logs.facts import FROM_ARGS
from sgtui.core.logs.rules import scalar

SERVER_ARG_FACTS = {
    "model_path": "model_path",
    "tp_size": "tp_size",
    "dp_size": "dp_size",
    "pp_size": "pp_size",
    "ep_size": "ep_size",
    "mem_fraction_static": "mem_fraction_static",
    "context_length": "context_length",
    "max_running_requests": "max_running_requests",
    "max_total_tokens": "max_total_tokens_arg",
    "chunked_prefill_size": "chunked_prefill_size",
    "cuda_graph_max_bs": "cuda_graph_max_bs",
    "cuda_graph_max_bs_decode": "cuda_graph_max_bs",  # 0.5.23
    "page_size": "page_size",
    "kv_cache_dtype": "kv_cache_dtype",
    "dtype": "dtype",
    "quantization": "quantization",
    "attention_backend": "attention_backend",
    "speculative_algorithm": "speculative_algorithm",
    "speculative_num_steps": "speculative_num_steps",
    "speculative_eagle_topk": "speculative_eagle_topk",
    "speculative_num_draft_tokens": "speculative_num_draft_tokens",
    "speculative_draft_model_path": "speculative_draft_model_path",
    "disable_radix_cache": "disable_radix_cache",
    "mamba_scheduler_strategy": "mamba_strategy",
    "mamba_radix_cache_strategy": "mamba_strategy",
    "max_mamba_cache_size": "max_mamba_cache_size",
    "mamba_ssm_dtype": "mamba_ssm_dtype",
    "enable_torch_compile": "enable_torch_compile",
    "disable_cuda_graph": "disable_cuda_graph",
    "enable_dp_attention": "enable_dp_attention",
    "enable_hierarchical_cache": "enable_hierarchical_cache",
    "host": "host",
    "port": "port",
    "nnodes": "nnodes",
    "node_rank": "node_rank",
    "dist_init_addr": "dist_init_addr",
    "load_format": "load_format",
    "cpu_offload_gb": "cpu_offload_gb",
    "disable_flashinfer": "disable_flashinfer",
    "base_gpu_id": "base_gpu_id",
    "moe_a2a_backend": "moe_a2a_backend",
    "enable_deepep_moe": "enable_deepep_moe",
    "model_impl": "model_impl",
}

# Command-line flags (a pasted or echoed launch command) -> fact names; the first spelling wins.
COMMAND_FLAG_FACTS = {
    "--model-path": "model_path",
    "--model": "model_path",
    "--tp-size": "tp_size",
    "--tp": "tp_size",
    "--tensor-parallel-size": "tp_size",
    "--dp-size": "dp_size",
    "--dp": "dp_size",
    "--mem-fraction-static": "mem_fraction_static",
    "--context-length": "context_length",
    "--max-running-requests": "max_running_requests",
    "--max-total-tokens": "max_total_tokens_arg",
    "--page-size": "page_size",
    "--kv-cache-dtype": "kv_cache_dtype",
    "--dtype": "dtype",
    "--quantization": "quantization",
    "--chunked-prefill-size": "chunked_prefill_size",
    "--cuda-graph-max-bs": "cuda_graph_max_bs",
    "--speculative-algorithm": "speculative_algorithm",
    "--speculative-num-draft-tokens": "speculative_num_draft_tokens",
    "--mamba-scheduler-strategy": "mamba_strategy",
    "--mamba-radix-cache-strategy": "mamba_strategy",
    "--port": "port",
    "--nnodes": "nnodes",
    "--pp-size": "pp_size",
    "--base-gpu-id": "base_gpu_id",
    "--moe-a2a-backend": "moe_a2a_backend",
    "--model-impl": "model_impl",
}
_COMMAND_FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)(?:=|\s+)(?!--)('[^']*'|\"[^\"]*\"|[^\s'\"]+)")
_STORE_TRUE_FLAGS = {
    "--disable-radix-cache": "disable_radix_cache",
    "--enable-torch-compile": "enable_torch_compile",
    "--disable-cuda-graph": "disable_cuda_graph",
    "--enable-deepep-moe": "enable_deepep_moe",
}


def _find_key(text: str, key: str, as_dict: bool = False) -> int:
    """Index just past `key=` (or `'key': ` in a dict dump) where key is a whole field name (not the tail
    of another), or -1."""
    needle = f"'{key}': " if as_dict else key + "="
    start = 0
    while True:
        idx = text.find(needle, start)
        if idx < 0:
            return -1
        if idx == 0 or text[idx - 1] in " (,{":
            return idx + len(needle)
        start = idx + 1


def _value_at(text: str, pos: int) -> str | None:
    if pos >= len(text):
        return None
    quote = text[pos]
    if quote in "'\"":
        end = pos + 1
        while True:
            end = text.find(quote, end)
            if end < 0:
                return None  # cut mid-value (a truncated paste): better no value than a wrong one
            if text[end - 1] != "\\":
                return text[pos + 1 : end]
            end += 1
    end = pos
    while end < len(text) and text[end] not in ",)}":
        end += 1
    token = text[pos:end].strip()
    if end >= len(text) and not token.replace(".", "").isalnum():
        return None
    return token


def parse_server_args(text: str) -> dict[str, Any]:
    """The memory-relevant fields of a `server_args=ServerArgs(...)` dump, or of 0.5.23's
    `server_args={'model_path': ..., ...}` dict (str.find, no backtracking)."""
    facts: dict[str, Any] = {}
    as_dict = text.find("server_args={", 0, 256) >= 0
    for key, fact in SERVER_ARG_FACTS.items():
        pos = _find_key(text, key, as_dict)
        if pos < 0:
            continue
        raw = _value_at(text, pos)
        if raw is None:
            continue
        quoted = text[pos] in "'\""
        value = raw if quoted else typed(fact, scalar(raw))
        if value is not None and fact not in facts:
            facts[fact] = value
    if "dtype" in facts:
        facts["dtype_arg"] = facts["dtype"]
    return facts


def looks_like_command(line: str) -> bool:
    """A pasted launch command or a note quoting flags (`# ... --tp 8`), not an SGLang log record, and not an
    exception's message quoting a flag in a sentence (`HFValidationError: ... --model-path pointing ...`)."""
    if "--" not in line:
        return False
    if line.lstrip().startswith("#"):
        return True
    if _LOGGING_RECORD.match(line):
        return False  # "WARNING:sglang.srt.server_args:... try to use --disable-radix-cache": advice
    if "sglang" not in line and "launch_server" not in line:
        return False
    return _EXCEPTION_HEAD.match(line) is None


# Python's default logging format, "LEVEL:logger.name:message": a record, never a pasted command.
_LOGGING_RECORD = re.compile(r"\s*(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.]+:")
# `Name: ...` / `pkg.mod.Name: ...` at the start of a line: an exception's own line, never a command.
_EXCEPTION_HEAD = re.compile(r"\s*(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Warning|Exit):")
# An example's placeholder (`--model-path <model>`, `[options]`, `{path}`, `...`), not a value in use:
# 0.5.23's `python -m sglang.launch_server` deprecation warning prints `sglang serve --model-path <model>
# [options]` (sglang/launch_server.py, __main__).
_PLACEHOLDER = ("<", "[", "{", "...", "$")


_INT_FACTS = frozenset(
    {
        "tp_size",
        "dp_size",
        "pp_size",
        "ep_size",
        "context_length",
        "max_running_requests",
        "max_total_tokens_arg",
        "page_size",
        "chunked_prefill_size",
        "cuda_graph_max_bs",
        "speculative_num_steps",
        "speculative_eagle_topk",
        "speculative_num_draft_tokens",
        "max_mamba_cache_size",
        "port",
        "nnodes",
        "node_rank",
    }
)


def typed(fact: str, value: Any) -> Any:
    """The value if it has the fact's type (an int count, a fraction), else None: prose is no value."""
    if fact in _INT_FACTS:
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    if fact == "mem_fraction_static":
        ok = isinstance(value, int | float) and not isinstance(value, bool) and 0 < value <= 1
        return float(value) if ok else None
    return value


def parse_command_flags(line: str) -> dict[str, Any]:
    facts: dict[str, Any] = {}
    for flag, value in _COMMAND_FLAG.findall(line[:LINE_CAP_FOR_COMMANDS]):
        fact = COMMAND_FLAG_FACTS.get(flag)
        if fact and value.startswith(_PLACEHOLDER):
            continue
        if fact and fact not in facts:
            checked = typed(fact, scalar(value.strip("'\"")))
            if checked is not None:
                facts[fact] = checked
    for flag, fact in _STORE_TRUE_FLAGS.items():
        if flag in line and fact not in facts:
            facts[fact] = True
    if "dtype" in facts:
        facts["dtype_arg"] = facts["dtype"]
    return facts


LINE_CAP_FOR_COMMANDS = 8192


_MAX_DUMP_LINES = 400
_DUMP_CAP = 65536


def is_server_args_line(body: str) -> bool:
    """`server_args=ServerArgs(...)` (0.2+), `server_args={...}` (0.5.23), `... =ServerArgs(` (wrappers), and
    0.1.x's `server_args: disable_flashinfer=False, ...` (printed once the pools exist)."""
    head = body[:200]
    return "server_args=" in head or "=ServerArgs(" in head or body.startswith("server_args: ")


class ArgsDump:
    """A server_args dump, possibly hard-wrapped over several lines by a terminal or a collector: the lines
    that follow without a log prefix continue it until its brackets close (or a new record starts)."""

    source = FROM_ARGS

    def __init__(self, first: str) -> None:
        self.parts = [first]
        self.size = len(first)
        if body_is_old_form(first) or first.rstrip().endswith((")", "}")):
            self.depth, self.quote = 0, ""  # the usual one-line dump: no need to walk it
        else:
            self.depth, self.quote = _scan(first, 0, "")
        self.closed = self.depth <= 0

    def add(self, body: str, time: str | None, ranks: tuple[str, ...], cloud_time: str | None) -> bool:
        """Take a continuation line; False when `body` is a new record instead (the dump ends before it)."""
        if time is not None or ranks or cloud_time is not None or len(self.parts) >= _MAX_DUMP_LINES:
            return False
        text = body.strip() if not self.quote else body.rstrip("\n")
        if not text or self.size + len(text) > _DUMP_CAP:
            return False
        self.parts.append(text)
        self.size += len(text)
        self.depth, self.quote = _scan(text, self.depth, self.quote)
        self.closed = self.depth <= 0
        return True

    def text(self) -> str:
        return "".join(self.parts)

    def facts(self) -> dict[str, Any]:
        return parse_server_args(self.text())


def body_is_old_form(body: str) -> bool:
    return body.startswith("server_args: ")


def _scan(text: str, depth: int, quote: str) -> tuple[int, str]:
    """Bracket depth outside quoted strings after `text`, and the quote still open ("" if none)."""
    escaped = False
    for ch in text:
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
    return depth, quote
