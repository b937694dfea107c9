"""The texts SGLang prints, from 0.1.x to 2026 builds, as small parsers (see sglang-memory.md section 6).

Each parser gets one line body already stripped of its prefix and capped in length; callers run it only
after a cheap substring check, so a line that mentions none of these costs a few `in` tests.
"""

from __future__ import annotations

import re
from typing import Any

_NUM = r"(-?\d+(?:\.\d+)?)"

LOAD_BEGIN = re.compile(r"Load weight begin\. avail mem=" + _NUM + " GB")
LOAD_END_TYPE = re.compile(r"type=([\w.]+)")
LOAD_END_DTYPE = re.compile(r"dtype=([\w.]+)")
LOAD_END_QUANT = re.compile(r"quant=([\w.-]+)")
ELAPSED = re.compile(r"(?:elapsed=|Time elapsed: )" + _NUM + r" ?s")
AVAIL = re.compile(r"avail[ _]mem=" + _NUM + r" ?GB")
MEM_USAGE = re.compile(r"mem usage=" + _NUM + r" ?GB")
KV_CACHE_DTYPE = re.compile(r"Using KV cache dtype: (\S+)")
SWA_POOL = re.compile(
    r"Use sliding window memory pool( \(all SWA\))?\.\s*"
    r"(?:full_layer_tokens=(\d+),\s*)?swa_layer_tokens=(\d+)"
)
MAMBA = re.compile(
    r"Mamba Cache is allocated\. max_mamba_cache_size: (\d+), conv_state size: " + _NUM + r" ?GB, "
    r"ssm_state size: " + _NUM + r" ?GB"
    r"(?:,? intermediate_ssm_state_cache size: " + _NUM + r" ?GB,? intermediate_conv_window_cache size: "
    r"" + _NUM + r" ?GB)?"
)
# "#tokens" is missing in 0.4.x ("KV Cache is allocated. K size: 1.42 GB, V size: 1.42 GB.").
KV_CACHE = re.compile(
    r"(?:(\w+) )?KV Cache (?:is allocated|VA upper bound)\. (?:dtype: ([\w.]+), )?(?:#tokens: (\d+), )?"
    r"(?:K size: " + _NUM + r" GB, V size: " + _NUM + r" GB|KV size: " + _NUM + r" GB)"
)
SWA_KV_POOL = re.compile(
    r"SWAKVPool (?:mem usage|VA upper bound): " + _NUM + r" ?GB, swa size: (\d+), full size: (\d+)"
)
# 0.5.23 with post-capture KV sizing: the pool's real size, after a "KV Cache VA upper bound" line.
POST_CAPTURE_KV = re.compile(r"KV cache allocated\. (?:dtype: ([\w.]+), )?#tokens: (\d+), KV size: " + _NUM)
# "Capture cuda graph failed: ", "Capture prefill CUDA graph failed: ", "Capture single-CG draft extend
# failed: " (0.5.23), "Capture CPU graph failed: "; not the "... graph capture failed for key=..; falling
# back" warnings of optional graphs.
CAPTURE_FAILED = re.compile(r"\bCapture [^:]{0,60}? failed: ")
GRAPH_LABEL = re.compile(r"Capture (?:(.+?) )?(?:cuda|CUDA) graph (?:begin|end)")
GRAPH_BS = re.compile(r"(?:Capture cuda graph bs|bs=)\s*\[([\d,\s]*)\]")
SUMMARY_PAIR = re.compile(r"(\w+)=" + _NUM)
UVICORN = re.compile(r"Uvicorn running on (?:(https?)://)?\[?([^\]\s]+?)\]?:(\d+)")
SHARDS = re.compile(r"(\d+)%\s*Completed\s*\|\s*(\d+)/(\d+)")
TQDM = re.compile(r"(\d+)%\|[^|]*\|\s*(\d+)/(\d+)")
CAPTURING = re.compile(r"Capturing batches \((?:bs=(\d+)\s*)?(?:avail_mem=" + _NUM + r" ?GB)?")
PROFILED = re.compile(r"larger than the profiled value (-?\d+)")
MRR_RESET = re.compile(r"Max running requests is reset to (\d+)")
MRR_CAPPED = re.compile(r"max_running_requests is capped to (\d+)")
MFS_REDUCED = re.compile(r"reduce --mem-fraction-static to " + _NUM)
MIN_VIABLE = re.compile(r"minimum viable = (?:[^=)]*= )?" + _NUM)
RAISE_ABOVE = re.compile(r"Raise --mem-fraction-static above " + _NUM)
DRAFT_MEM = re.compile(r"mem usage=" + _NUM + r" ?GB")

SUMMARY_FACTS = {
    "max_total_num_tokens": "max_total_num_tokens",
    "max_total_num_token": "max_total_num_tokens",  # 0.1.x
    "max_prefill_num_token": "max_prefill_tokens",
    "chunked_prefill_size": "chunked_prefill_size",
    "max_prefill_tokens": "max_prefill_tokens",
    "max_running_requests": "max_running_requests",
    "context_len": "context_length",
    "available_gpu_mem": "available_gpu_mem_gib",
    "available_cpu_mem": "available_cpu_mem_gib",
}

# server_args / ServerArgs(...) keys -> fact names.
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
}
_COMMAND_FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)(?:=|\s+)(?!--)('[^']*'|\"[^\"]*\"|[^\s'\"]+)")
_STORE_TRUE_FLAGS = {
    "--disable-radix-cache": "disable_radix_cache",
    "--enable-torch-compile": "enable_torch_compile",
    "--disable-cuda-graph": "disable_cuda_graph",
}


def scalar(text: str) -> Any:
    """A printed Python/CLI value as int, float, bool, None or str."""
    if text in ("None", "null"):
        return None
    if text in ("True", "False"):
        return text == "True"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def num(text: str | None) -> float | int | None:
    if text is None:
        return None
    value = scalar(text)
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


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
    """A pasted launch command or a note quoting flags (`# ... --tp 8`), not an SGLang log record."""
    if "--" not in line:
        return False
    return line.lstrip().startswith("#") or "sglang" in line or "launch_server" in line


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


def parse_summary(body: str) -> dict[str, Any]:
    """`max_total_num_tokens=..., max_running_requests=..., context_len=..., available_gpu_mem=... GB`."""
    values: dict[str, Any] = {}
    for key, raw in SUMMARY_PAIR.findall(body):
        key = key.lower()  # 0.1.x capitalised the first one: "Max_total_num_token=115621"
        if key in SUMMARY_FACTS:
            values[SUMMARY_FACTS[key]] = scalar(raw)
    return values


def parse_graph_line(body: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    label = GRAPH_LABEL.search(body)
    if label and label.group(1):
        values["label"] = label.group(1)
    for name, rx in (("elapsed_s", ELAPSED), ("avail_gib", AVAIL), ("mem_usage_gib", MEM_USAGE)):
        m = rx.search(body)
        if m:
            values[name] = num(m.group(1))
    return values


def parse_load_end(body: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, rx in (
        ("elapsed_s", ELAPSED),
        ("avail_gib", AVAIL),
        ("mem_usage_gib", MEM_USAGE),
    ):
        m = rx.search(body)
        if m:
            values[name] = num(m.group(1))
    for name, rx in (("type", LOAD_END_TYPE), ("dtype", LOAD_END_DTYPE), ("quant", LOAD_END_QUANT)):
        m = rx.search(body)
        if m:
            values[name] = m.group(1)
    return values


def parse_progress(body: str) -> tuple[int, int, int] | None:
    """(percent, done, total) of a tqdm bar."""
    m = SHARDS.search(body) or TQDM.search(body)
    if m is None:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


# ---- failures --------------------------------------------------------------------------------------------

_EXCEPTION_LINE = re.compile(r"(?:[A-Za-z_]\w*\.)*([A-Z]\w*(?:Error|Exception|Exit))(?::\s*(.*))?$")
_NOT_ENOUGH = re.compile(
    r"Not enought? memory\. Please try to increase --mem-fraction-static"
    r"(?:\.? ?Current value: (?:(?:self\.server_args\.)?mem_fraction_static=)?" + _NUM + ")?"
)
_LEAVE_NO = re.compile(r"leave no GPU memory for the KV cache under --mem-fraction-static=" + _NUM)
_UNBALANCED = re.compile(
    r"(min_per_gpu_memory|local_gpu_memory|pre_model_load_memory)=" + _NUM + r"(?=,|$|\s)"
)
_OTHER_DEVICE = re.compile(r"\b(?:NPU|HIP|XPU|MUSA) out of memory")  # Ascend, ROCm, Intel, Moore Threads
_OOM_ALLOC = re.compile(r"Tried to allocate " + _NUM + r" ?([GMK]iB)")
_OOM_TOTAL = re.compile(r"total capacity of " + _NUM + r" ?GiB of which " + _NUM + r" ?([GMK]iB) is free")
_ARCH = re.compile(
    r"Model architectures? \[?([^\]]*?)\]? (?:are|is) not supported|"
    r"Model architectures \[(.*?)\] failed to be inspected"
)
_UNSUPPORTED_ARCH = re.compile(r"nsupported architectures?: ?\[?'?(\w+)")
_HF_ARCH = re.compile(r"model type `([^`]+)` but Transformers does not recognize")
_PORT_TUPLE = re.compile(r"address \(?'?([^',)]*)'?,\s*(\d+)")
_PORT_WORD = re.compile(r"[Pp]ort[ =:]+(\d{2,5})")
_PORT_ADDR = re.compile(r"(?:tcp://[\w.\-]+|\[[0-9a-fA-F:.]*\]|\b\d{1,3}(?:\.\d{1,3}){3}):(\d{2,5})\b")
_DIED = re.compile(r"Rank (\d+) scheduler (?:is dead|died during initialization \(exit code: (-?\d+)\))")
_EXIT_CODE = re.compile(r"exit ?code[: =]+(-?\d+)", re.IGNORECASE)
_ARG_ERROR = re.compile(
    r": error: (unrecognized arguments: .*|argument .*|ambiguous option: .*|"
    r"the following arguments are required: .*|invalid choice: .*)"
)
_INCOMPATIBLE = re.compile(r"Speculative decoding for (\w+) is not compatible with radix cache")
_DIVISIBLE = re.compile(
    r"Total number of ([\w ]+?) \((\d+)\) must be divisible by tensor parallel size \((\d+)\)"
)
_CONTEXT_TOO_LONG = re.compile(
    r"User-specified context_length \((\d+)\) is greater than the derived "
    r"context_length \((\d+)\)"
)


def failure(body: str) -> tuple[str | None, str, dict[str, Any]] | None:
    """(error class, strength, values) when a line signals a failure, else None.

    Strengths: "fatal" (the message itself ends the launch), "cause" (fatal before the server is ready),
    "weak" (only counts when something died), "generic" (an exception of no known class), "death" (a
    process died; the cause is elsewhere).
    """
    if " failed: " in body and "Capture " in body and CAPTURE_FAILED.search(body):
        oom = "out of memory" in body
        return "cuda_graph_failed", "fatal", {"oom": oom, **(oom_values(body) if oom else {})}
    if "memory" in body:
        if "Not enough memory" in body or "Not enought memory" in body:
            m = _NOT_ENOUGH.search(body)
            values = {"mem_fraction_static": num(m.group(1))} if m and m.group(1) else {}
            return "not_enough_memory", "fatal", values
        if "leave no GPU memory for the KV cache" in body:
            m = _LEAVE_NO.search(body)
            return "not_enough_memory", "fatal", {"mem_fraction_static": num(m.group(1))} if m else {}
        if "Not enough GPU memory for hybrid" in body:
            return "not_enough_memory", "fatal", {"pool": "mamba"}
        if "memory capacity is unbalanced" in body:
            # Raised (ValueError) up to 0.5.x; only a warning by default since (the launch goes on), so
            # the logged form counts only when the launch dies.
            values = {k: num(v) for k, v in _UNBALANCED.findall(body)}
            raised = "Error: The memory capacity" in body
            return "memory_unbalanced", "fatal" if raised else "weak", values
        if "out of memory" in body and ("CUDA" in body or "cuda" in body or _OTHER_DEVICE.search(body)):
            return "cuda_oom", "cause", oom_values(body)
    if "Raise --mem-fraction-static above" in body:
        return "not_enough_memory", "fatal", {}
    if "too small to serve any requests" in body or "Memory pool size is too small" in body:
        if "mamba" in body:  # 0.5.23: "Hybrid (mamba/linear-attention) state cache is too small to serve ..."
            values: dict[str, Any] = {"pool": "mamba"}
            for key, raw in SUMMARY_PAIR.findall(body):
                if key in ("max_num_reqs", "mamba_ratio", "max_mamba_cache_size"):
                    values[key] = num(raw)
            return "not_enough_memory", "fatal", values
        return "not_enough_memory", "fatal", {}
    if "max_running_request is zero" in body:
        return "not_enough_memory", "fatal", {}
    if "SWA pool" in body and ("cannot hold even one request" in body or "leaves no room" in body):
        return "not_enough_memory", "fatal", {"pool": "swa"}
    if "OutOfMemoryError" in body:
        return "cuda_oom", "cause", oom_values(body)
    if "not supported for now" in body or "failed to be inspected" in body:
        m = _ARCH.search(body)
        if m:
            names = (m.group(1) or m.group(2) or "").replace("'", "").replace('"', "").strip()
            return "unsupported_model", "fatal", {"architectures": names}
    if "Transformers does not recognize" in body:
        m = _HF_ARCH.search(body)
        return "unsupported_model", "fatal", {"model_type": m.group(1)} if m else {}
    if "nsupported architecture" in body and body[:1].isalpha():
        m = _UNSUPPORTED_ARCH.search(body)  # 0.2/0.3: "Unsupported architectures: X. Supported list: [...]"
        return "unsupported_model", "fatal", {"architectures": m.group(1)} if m else {}
    if "must be divisible by tensor parallel size" in body:
        m = _DIVISIBLE.search(body)
        values = {"what": m.group(1), "count": int(m.group(2)), "tp_size": int(m.group(3))} if m else {}
        return "bad_arguments", "fatal", {"flag": "--tp-size", **values}
    if "in use" in body and ("already in use" in body or "Address in use" in body):
        lowered = body.lower()
        if "trying" in lowered or "try next" in lowered or "retry" in lowered:
            return None
        return "port_in_use", "fatal", port_values(body)
    if "[Errno 98]" in body:
        return "port_in_use", "fatal", port_values(body)
    if ": error: " in body:
        m = _ARG_ERROR.search(body)
        if m:
            return "bad_arguments", "fatal", {"argparse": m.group(1)}
    if "not compatible with radix cache" in body:
        m = _INCOMPATIBLE.search(body)
        return "incompatible_flags", "fatal", {"conflict": "radix_cache", "arch": m.group(1) if m else None}
    if "User-specified context_length" in body:
        m = _CONTEXT_TOO_LONG.search(body)
        values = {"requested": int(m.group(1)), "derived": int(m.group(2))} if m else {}
        return "bad_arguments", "fatal", {"flag": "--context-length", **values}
    if "ccl" in body or "NCCL" in body or "DistBackendError" in body or "Watchdog caught" in body:
        nccl = nccl_strength(body)
        if nccl:
            return "nccl", nccl, {"shm": "/dev/shm" in body or "shared memory" in body}
    if "sigquit" in body and "Received sigquit" in body:
        return None, "death", {"sigquit": True}
    if "scheduler" in body and ("scheduler is dead" in body or "scheduler died" in body):
        m = _DIED.search(body)
        code = int(m.group(2)) if m and m.group(2) else None
        if code == -9:
            return "oom_killed", "cause", {"exit_code": code, "rank": int(m.group(1)) if m else None}
        return None, "death", {"exit_code": code}
    if " hit an exception" in body:
        return None, "death", {"exception": True}
    if "Initialization failed" in body:
        return None, "death", {}
    if "other ranks th" in body and "finish the model loading" in body:
        # "TP rank 1 could finish the model loading, but there are other ranks that didn't": a peer (often on
        # another node) died while loading; its own log holds the cause.
        return None, "death", {"peer_failed": True}
    # systemd: "sglang.service: A process of this unit has been killed by the OOM killer." / "Failed with
    # result 'oom-kill'."; the kernel: "oom-kill:constraint=..." (not SGLang's own hint to check dmesg).
    if ("OOM killer" in body or "oom-kill" in body) and (
        "killed by the OOM killer" in body or "'oom-kill'" in body or "oom-kill:" in body
    ):
        return "oom_killed", "cause", {}
    if "status=9/KILL" in body:  # systemd: "Main process exited, code=killed, status=9/KILL"
        return None, "death", {"killed": True}
    if "Killed" in body:
        if "Killed process" in body and ("Out of memory" in body or "oom" in body.lower()):
            return "oom_killed", "cause", {}
        stripped = body.strip()
        if stripped == "Killed" or re.search(r"(?:^|:\s*\d+\s+|\s)Killed(?:\s+\S*python|\s*$)", stripped):
            return None, "death", {"killed": True}
    if "xit code" in body:
        m = _EXIT_CODE.search(body)
        if m and int(m.group(1)) in (-9, 137):
            return "oom_killed", "cause", {"exit_code": int(m.group(1))}
    if ("Error" in body or "Exception" in body) and body[:1].isalpha():
        m = _EXCEPTION_LINE.match(body)
        if m:
            return None, "generic", {"exception": m.group(1), "message": (m.group(2) or "")[:300]}
    return None


def nccl_strength(body: str) -> str | None:
    if "NCCL WARN" in body:
        return "weak"
    for needle in (
        "NCCL error",
        "ncclUnhandledCudaError",
        "ncclSystemError",
        "ncclInternalError",
        "ncclInvalidUsage",
        "ncclRemoteError",
        "DistBackendError",
        "Watchdog caught collective operation timeout",
    ):
        if needle in body:
            return "cause"
    return None


def oom_values(body: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    m = _OOM_ALLOC.search(body)
    if m:
        amount = float(m.group(1))
        values["tried_gib"] = round(amount / 1024 if m.group(2) == "MiB" else amount, 3)
    m = _OOM_TOTAL.search(body)
    if m:
        values["gpu_total_gib"] = float(m.group(1))
        free = float(m.group(2))
        values["gpu_free_gib"] = round(free / 1024 if m.group(3) == "MiB" else free, 3)
    return values


def port_values(body: str) -> dict[str, Any]:
    """The port a bind error names: `address ('::', 31000)`, `port 30001`, `tcp://h:30001`, `[::]:29500`."""
    m = _PORT_TUPLE.search(body)
    if m:
        return {"host": m.group(1), "port": int(m.group(2))}
    m = _PORT_WORD.search(body) or _PORT_ADDR.search(body)
    return {"port": int(m.group(1))} if m else {}


# Traceback frames name the step that failed even when the pasted log lacks the milestones.
_FRAME_HINTS = (
    ("cuda_graph_runner", "capturing_graphs"),
    ("init_cuda_graphs", "capturing_graphs"),
    ("capture_one_batch_size", "capturing_graphs"),
    ("init_memory_pool", "allocating_pools"),
    ("pool_configurator", "allocating_pools"),
    ("kv_cache_configurator", "allocating_pools"),
    ("profile_max_num_token", "allocating_pools"),
    ("load_weights", "loading_weights"),
    ("load_model", "loading_weights"),
    ("model_loader", "loading_weights"),
    ("init_torch_distributed", "distributed_init"),
    ("initialize_model_parallel", "distributed_init"),
    ("server_args.py", "arguments"),
)


def frame_file(line: str) -> str:
    """The file name a `File "/a/b/flashinfer_backend.py", line 452, in f` frame names ("" if none)."""
    start = line.find('File "')
    end = line.find('"', start + 6) if start >= 0 else -1
    return line[start + 6 : end].rsplit("/", 1)[-1] if end > start else ""


def frame_hint(line: str) -> str | None:
    for needle, hint in _FRAME_HINTS:
        if needle in line:
            return hint
    return None
