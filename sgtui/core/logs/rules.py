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
# model_loader/utils.py (0.5.8): "GlmMoeDsaForCausalLM has no SGLang implementation, falling back to
# Transformers implementation. Some features may not be supported ..."
TRANSFORMERS_FALLBACK = re.compile(r"(\w+) has no SGLang implementation, falling back to Transformers")
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
# "#tokens" is missing in 0.4.x ("KV Cache is allocated. K size: 1.42 GB, V size: 1.42 GB."). A line cut
# short (a terminal's width, a pager, an excerpt) is still the milestone; each number counts only whole
# (followed by its separator or unit).
KV_CACHE = re.compile(
    r"(?:(\w+) )?KV Cache (?:is allocated|VA upper bound)\.(?: dtype: ([\w.]+),)?(?: #tokens: (\d+),)?"
    r"(?: K size: " + _NUM + r" GB(?:, V size: " + _NUM + r" GB)?| KV size: " + _NUM + r" GB)?"
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
MAX_TOTAL_ASKED = re.compile(r"max_total_tokens=(\d+) is larger than the profiled value")
PROFILED = re.compile(r"larger than the profiled value (-?\d+)")
MRR_RESET = re.compile(r"Max running requests is reset to (\d+)")
MRR_CAPPED = re.compile(r"max_running_requests is capped to (\d+)")
MFS_REDUCED = re.compile(r"reduce --mem-fraction-static to " + _NUM)
MIN_VIABLE = re.compile(r"minimum viable = (?:[^=)]*= )?" + _NUM)
RAISE_ABOVE = re.compile(r"Raise --mem-fraction-static above " + _NUM)
DRAFT_MEM = re.compile(r"mem usage=" + _NUM + r" ?GB")


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
