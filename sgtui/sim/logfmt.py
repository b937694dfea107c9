"""SGLang's startup log lines, worded per version, for the simulated server to print.

Wording, order and prefixes follow the versions' source (sglang-memory.md section 6): `[date time TPn] `
prefixes (TPn only when tp > 1), tqdm bars joined by carriage returns, the memory lines with two decimals,
and failures as Python tracebacks ending in the error SGLang raises.
"""

from __future__ import annotations

import time
from collections.abc import Sequence


def version_tuple(version: str) -> tuple[int, int, int]:
    parts = [int(p) if p.isdigit() else 0 for p in version.split(".")[:3]]
    padded = parts + [0] * (3 - len(parts))
    return padded[0], padded[1], padded[2]


def is_new(version: str) -> bool:
    """0.5.23 and later changed several lines; 0.5.9 and 0.5.11 share the old wording."""
    return version_tuple(version) >= (0, 5, 23)


def prefix(rank: int | None, tp_size: int, now: float | None = None) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(time.time() if now is None else now))
    if rank is None or tp_size <= 1:
        return f"[{stamp}] "
    return f"[{stamp} TP{rank}] "


def server_args_line(values: dict[str, object], version: str = "0.5.9") -> str:
    """0.5.23 dumps a dict (`server_args={'k': v}`); older versions the dataclass repr."""
    names = [(name.lstrip("-").replace("-", "_"), value) for name, value in values.items()]
    if is_new(version):
        return "server_args={" + ", ".join(f"{name!r}: {value!r}" for name, value in names) + "}"
    return "server_args=ServerArgs(" + ", ".join(f"{name}={value!r}" for name, value in names) + ")"


def init_dist_begin(version: str) -> str:
    """0.5.23's distributed/bootstrap.py logs "Init parallel begin." (0.5.20's "Init torch distributed
    begin.")."""
    return "Init parallel begin." if is_new(version) else "Init torch distributed begin."


def init_parallel_end(elapsed: float) -> str:
    """0.5.23 only: bootstrap.py's end of the parallel init, before the memory baseline line."""
    return f"Init parallel ends. elapsed={elapsed:.2f} s"


def init_dist_end(version: str, elapsed: float, usage_gib: float) -> str:
    if is_new(version):
        return f"Memory baseline taken. mem usage={usage_gib:.2f} GB"
    return f"Init torch distributed ends. elapsed={elapsed:.2f} s, mem usage={usage_gib:.2f} GB"


def load_weight_begin(avail_gib: float) -> str:
    return f"Load weight begin. avail mem={avail_gib:.2f} GB"


def load_weight_end(
    version: str, elapsed: float, arch: str, dtype: str, avail_gib: float, usage_gib: float
) -> str:
    middle = f"dtype=torch.{dtype}, " if version_tuple(version) <= (0, 5, 9) else ""
    return (
        f"Load weight end. elapsed={elapsed:.2f} s, type={arch}, {middle}"
        f"avail mem={avail_gib:.2f} GB, mem usage={usage_gib:.2f} GB."
    )


def shard_bar(done: int, total: int, elapsed: float, version: str = "0.5.9") -> str:
    """One state of the safetensors tqdm bar, as it appears between carriage returns. From 0.5.10 the
    loader's default is the multi-threaded iterator (model_loader/loader.py: `enable_multithread_load`
    defaults to True; weight_utils.buffered_multi_thread_safetensors_weights_iterator's bar)."""
    desc = (
        "Multi-thread loading shards"
        if version_tuple(version) >= (0, 5, 10)
        else ("Loading safetensors checkpoint shards")
    )
    pct = int(100 * done / total) if total else 100
    rate = done / elapsed if elapsed > 0 and done else 0.0
    left = (total - done) / rate if rate else 0.0
    rate_text = f"{rate:5.2f}it/s" if done else "?it/s"
    eta = _clock(left) if done else "?"
    return f"{desc}: {pct:3d}% Completed | {done}/{total} [{_clock(elapsed)}<{eta}, {rate_text}]"


def capture_bar(done: int, total: int, bs: int, avail_gib: float, elapsed: float) -> str:
    width = 10
    filled = width * done // total if total else width
    bar = "█" * filled + " " * (width - filled)
    pct = int(100 * done / total) if total else 100
    rate = done / elapsed if elapsed > 0 and done else 0.0
    return (
        f"Capturing batches (bs={bs} avail_mem={avail_gib:.2f} GB): {pct:3d}%|{bar}| {done}/{total} "
        f"[{_clock(elapsed)}<00:00, {rate:5.2f}it/s]"
    )


def _clock(seconds: float) -> str:
    s = max(0, int(seconds))
    return f"{s // 60:02d}:{s % 60:02d}"


def kv_dtype_line(dtype: str) -> str:
    return f"Using KV cache dtype: torch.{dtype}"


def mamba_line(
    size: int, conv_gib: float, ssm_gib: float, inter_ssm: float | None, inter_conv: float | None
) -> str:
    line = (
        f"Mamba Cache is allocated. max_mamba_cache_size: {size}, conv_state size: {conv_gib:.2f}GB, "
        f"ssm_state size: {ssm_gib:.2f}GB "
    )
    if inter_ssm is not None and inter_conv is not None:
        line += (
            f"intermediate_ssm_state_cache size: {inter_ssm:.2f}GB "
            f"intermediate_conv_window_cache size: {inter_conv:.2f}GB "
        )
    return line


def kv_line(version: str, tokens: int, k_gib: float, v_gib: float, dtype: str) -> str:
    dtype_part = f"dtype: torch.{dtype}, " if is_new(version) else ""
    sizes = f"K size: {k_gib:.2f} GB, V size: {v_gib:.2f} GB"
    return f"KV Cache is allocated. {dtype_part}#tokens: {tokens}, {sizes}"


def pool_end(avail_gib: float) -> str:
    return f"Memory pool end. avail mem={avail_gib:.2f} GB"


def graph_begin(version: str, avail_gib: float) -> str:
    if is_new(version):
        return f"Capture target decode CUDA graph begin. backend=full avail mem={avail_gib:.2f} GB"
    return f"Capture cuda graph begin. This can take up to several minutes. avail mem={avail_gib:.2f} GB"


def graph_end(version: str, elapsed: float, usage_gib: float, avail_gib: float, sizes: Sequence[int]) -> str:
    if is_new(version):
        return (
            f"Capture target decode CUDA graph end. bs={list(sizes)}, elapsed={elapsed:.2f} s, "
            f"mem usage={usage_gib:.2f} GB, avail mem={avail_gib:.2f} GB."
        )
    return (
        f"Capture cuda graph end. Time elapsed: {elapsed:.2f} s. mem usage={usage_gib:.2f} GB. "
        f"avail mem={avail_gib:.2f} GB."
    )


def scheduler_summary(
    tokens: int, chunked: int, max_prefill: int, max_running: int, context_len: int, avail_gib: float
) -> str:
    return (
        f"max_total_num_tokens={tokens}, chunked_prefill_size={chunked}, max_prefill_tokens={max_prefill}, "
        f"max_running_requests={max_running}, context_len={context_len}, available_gpu_mem={avail_gib:.2f} GB"
    )


SIGQUIT_LINE = "Received sigquit from a child process. It usually means the child failed."
READY_LINE = "The server is fired up and ready to roll!"

_SITE = "{site}/sglang/srt"

# Frames from SGLang 0.5.9's scheduler start-up down to the memory-pool check (file, line, function, code).
_SCHEDULER_FRAMES: list[tuple[str, int, str, str]] = [
    ("managers/scheduler.py", 3130, "run_scheduler_process", "scheduler = Scheduler("),
    ("managers/scheduler.py", 368, "__init__", "self.init_model_worker()"),
    ("managers/scheduler.py", 564, "init_model_worker", "self.init_tp_model_worker()"),
    ("managers/scheduler.py", 522, "init_tp_model_worker", "self.tp_worker = TpModelWorker("),
    ("managers/tp_worker.py", 247, "__init__", "self._init_model_runner()"),
    ("managers/tp_worker.py", 330, "_init_model_runner", "self._model_runner = ModelRunner("),
    ("model_executor/model_runner.py", 413, "__init__", "self.initialize(min_per_gpu_memory)"),
]
_POOL_FRAMES = [
    ("model_executor/model_runner.py", 590, "initialize", "self.init_memory_pool(min_per_gpu_memory)"),
    ("model_executor/model_runner_kv_cache_mixin.py", 416, "init_memory_pool", "raise RuntimeError("),
]
_NEW_POOL_FRAMES = [
    ("model_executor/model_runner.py", 655, "initialize", "self.init_memory_pool(pre_model_load_memory)"),
    ("mem_cache/kv_cache_configurator.py", 212, "configure", "config = MemoryPoolConfig("),
    ("mem_cache/pool_configurator.py", 56, "__post_init__", "raise RuntimeError("),
]
_DIST_FRAMES = [
    (
        "model_executor/model_runner.py",
        475,
        "initialize",
        "min_per_gpu_memory = self.init_torch_distributed()",
    ),
    ("model_executor/model_runner.py", 844, "init_torch_distributed", "raise RuntimeError(msg)"),
]
_GRAPH_FRAMES = [
    ("model_executor/model_runner.py", 612, "initialize", "self.init_device_graphs()"),
    (
        "model_executor/model_runner.py",
        2156,
        "init_device_graphs",
        "self.graph_runner = graph_runners[self.device](self)",
    ),
    ("model_executor/cuda_graph_runner.py", 373, "__init__", "raise Exception("),
]
_MAIN_FRAMES = [
    ("{site}/sglang/launch_server.py", 32, "<module>", "server_args = prepare_server_args(sys.argv[1:])"),
    (
        "{site}/sglang/srt/server_args.py",
        5480,
        "prepare_server_args",
        "return ServerArgs.from_cli_args(raw_args)",
    ),
    (
        "{site}/sglang/srt/server_args.py",
        4712,
        "from_cli_args",
        "return cls(**{attr: getattr(args, attr) for attr in attrs})",
    ),
    ("<string>", 324, "__init__", ""),
    ("{site}/sglang/srt/server_args.py", 712, "__post_init__", "self._handle_model_specific_adjustments()"),
    ("{site}/sglang/srt/server_args.py", 1766, "_handle_model_specific_adjustments", "raise ValueError("),
]

_WEIGHT_FRAMES = [
    ("model_executor/model_runner.py", 587, "initialize", "self.load_model()"),
    ("model_executor/model_runner.py", 958, "load_model", "self.model = get_model("),
    ("model_loader/__init__.py", 28, "get_model", "return loader.load_model("),
    ("model_loader/loader.py", 594, "load_model", "self.load_weights_and_postprocess("),
    ("model_loader/loader.py", 617, "load_weights_and_postprocess", "model.load_weights(weights)"),
    ("{torch}/utils/_device.py", 104, "__torch_function__", "return func(*args, **kwargs)"),
]

PHASE_FRAMES = {"dist": _DIST_FRAMES, "weights": _WEIGHT_FRAMES, "pool": _POOL_FRAMES, "graph": _GRAPH_FRAMES}


def traceback_lines(site: str, phase: str, version: str, error: str) -> list[str]:
    """The traceback a failure in `phase` prints ("dist", "pool", "graph" in a scheduler, "args" in main)."""
    if phase == "args":
        frames = _MAIN_FRAMES
    else:
        tail = _NEW_POOL_FRAMES if phase == "pool" and is_new(version) else PHASE_FRAMES[phase]
        frames = [(f"{_SITE}/{f}", n, fn, code) for f, n, fn, code in _SCHEDULER_FRAMES + tail]
    lines = ["Traceback (most recent call last):"]
    for path, line, func, code in frames:
        where = path.replace(f"{_SITE}/{{torch}}", "{site}/torch").format(site=site)
        lines.append(f'  File "{where}", line {line}, in {func}')
        if code:
            lines.append(f"    {code}")
    lines.append(error)
    return lines
