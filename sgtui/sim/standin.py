"""The SGLang stand-in: `python -m sglang.launch_server ...` inside the simulated host.

It parses the real flags (sgtui's flag table, for the installed SGLang version), asks sgtui's fit engine
what SGLang would do with the GPUs it finds in the host state, and then acts it out: one process per TP
rank holds fake GPU memory that rises as weights load and pools are allocated, and the launcher writes a
log in the version's wording with realistic pacing (SGTUI_SIM_SPEED divides every delay). A launch the
fit engine says fails dies the way SGLang dies: the scheduler traceback, "Received sigquit from a child
process...", and a SIGKILL of the launcher by itself. A ready server answers /health and /get_model_info
on 127.0.0.1:--port until SIGTERM (or only SIGKILL, when the scenario says it ignores TERM).
"""

from __future__ import annotations

import contextlib
import ctypes
import http.server
import importlib.metadata
import json
import os
import random
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from sgtui.sim import logfmt
from sgtui.sim.state import StateStore, gpu_rows, mark_exited, proc_start_time, set_holding

SPEED_ENV = "SGTUI_SIM_SPEED"
VENV_ENV = "SGTUI_SIM_VENV"  # set by the venv's python wrapper: the install dir as the container sees it
MODELS_DIR = Path(__file__).with_name("models")
CTX_GIB = 0.99  # CUDA context + NCCL per rank, taken before the baseline measurement
GIB = 2**30
SITE = "{venv}/lib/python3.12/site-packages"

# Seconds of each phase at speed 1 (about 20 s to ready, like a small model on a fast disk).
PHASES = {"args": 1.0, "dist": 1.5, "weights": 8.0, "pools": 1.0, "draft": 1.0, "graphs": 4.0, "http": 1.0,
          "warmup": 1.0}


class Terminated(Exception):
    """SIGTERM arrived: unwind to the shutdown path."""


@dataclass
class Rank:
    index: int  # TP rank
    gpu: int  # host GPU index
    total_gib: float
    free_gib: float  # before our CUDA context
    pid: int = 0
    used_gib: float = 0.0

    @property
    def baseline_gib(self) -> float:
        return self.free_gib - CTX_GIB


class Log:
    """The server's stdout (the run's log): prefixed lines, tqdm updates, one writer at a time."""

    def __init__(self, stream: TextIO, tp: int) -> None:
        self.stream = stream
        self.tp = tp
        self.lock = threading.Lock()

    def write(self, text: str) -> None:
        with self.lock:
            self.stream.write(text)
            self.stream.flush()

    def line(self, text: str, rank: int | None = None) -> None:
        self.write(logfmt.prefix(rank, self.tp) + text + "\n")

    def ranks(self, ranks: Sequence[Rank], text: Callable[[Rank], str]) -> None:
        for rank in ranks:
            self.line(text(rank), rank.index)

    def raw(self, text: str) -> None:
        self.write(text + "\n")


class StandIn:
    """One simulated launch: state, ranks, timing and the log."""

    def __init__(self, state_dir: Path, argv: list[str], out: TextIO) -> None:
        self.store = StateStore(state_dir)
        self.state = self.store.read()
        self.argv = argv
        self.version = importlib.metadata.version("sglang")
        self.speed = float(os.environ.get(SPEED_ENV) or self.state.get("speed") or 1.0)
        self.release_delay = float(self.state.get("release_delay_s", 1.0)) / self.speed
        self.ignore_term = bool(self.state.get("ignore_term"))
        self.venv = os.environ.get(VENV_ENV) or str(Path(sys.executable).parent.parent)
        self.out = out
        self.log = Log(out, 1)
        self.ranks: list[Rank] = []
        self.serving = False
        self.http: http.server.ThreadingHTTPServer | None = None
        self.shards = 1

    # --- timing and memory --------------------------------------------------------------------------

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, seconds) / self.speed)

    def hold(self, rank: Rank, gib: float, util: int = 0) -> None:
        rank.used_gib = max(0.0, gib)
        with self.store.update() as state:
            set_holding(
                state,
                pid=rank.pid,
                gpu=rank.gpu,
                mib=round(rank.used_gib * 1024),
                name=f"sglang::scheduler_TP{rank.index}" if self.log.tp > 1 else "sglang::scheduler",
                release_delay=self.release_delay,
                util=util,
            )

    def avail(self, rank: Rank) -> float:
        return rank.free_gib - rank.used_gib

    # --- the launch ---------------------------------------------------------------------------------

    def run(self) -> int:
        from sgtui.core.errors import UserError

        self.record([os.getpid()])
        try:
            from sgtui.core.flags import parse_argv

            parsed = parse_argv(self.argv, self.version)
        except UserError as exc:
            self.log.raw("usage: launch_server.py [-h] --model-path MODEL_PATH [options]")
            self.log.raw(f"launch_server.py: error: {exc}")
            return 2
        spec = parsed.spec
        self.log = Log(self.out, spec.tp_size)
        facts_dir = model_folder(spec.model_path)
        if facts_dir is None:
            self.fail_main(
                f"OSError: Can't load the configuration of '{spec.model_path}'. Make sure '{spec.model_path}' "
                "is the correct path to a directory containing a config.json file"
            )
            return 1
        from sgtui.core.model import load_model_facts

        facts = load_model_facts(facts_dir)
        self.shards = shard_count(facts_dir)
        self.sleep(PHASES["args"] / 2)
        for note in server_arg_notes(spec, facts, self.version):
            self.log.line(note)
        self.log.line(logfmt.server_args_line(parsed.values))
        if (err := radix_conflict(spec, facts, self.version)) is not None:
            self.fail_main(err)
            return 1
        if not self.place_ranks(spec.tp_size):
            return self.crash("dist", "RuntimeError: CUDA error: invalid device ordinal")
        self.start_ranks()
        self.sleep(PHASES["args"] / 2)
        return self.start_up(spec, facts, parsed.values)

    def place_ranks(self, tp: int) -> bool:
        rows = gpu_rows(self.state, self.visible_gpus())
        if tp > len(rows):
            self.ranks = [Rank(0, rows[0].index if rows else 0, 0.0, 0.0)]
            return False
        self.ranks = [Rank(i, r.index, r.total_mib / 1024, r.free_mib / 1024) for i, r in enumerate(rows[:tp])]
        return True

    def visible_gpus(self) -> list[int]:
        indices = [int(g["index"]) for g in self.state["gpus"]]
        container = os.environ.get("SGTUI_SIM_CONTAINER")
        if container and container in self.state.get("containers", {}):
            allowed = self.state["containers"][container]["gpus"]
            indices = [i for i in indices if i in allowed]
        cvd = os.environ.get("CUDA_VISIBLE_DEVICES")
        if cvd is not None:
            picked = [int(x) for x in cvd.split(",") if x.strip().isdigit()]
            indices = [indices[i] for i in picked if i < len(indices)]
        return indices

    def record(self, pids: list[int]) -> None:
        """Note our processes in the host state, so that closing the host can kill exactly them."""
        pgid = os.getpgrp()
        with self.store.update() as state:
            servers = state.setdefault("servers", [])
            entry = next((s for s in servers if s["pgid"] == pgid and s["main"] == os.getpid()), None)
            if entry is None:
                entry = {"main": os.getpid(), "pgid": pgid, "pgid_start": proc_start_time(pgid), "pids": []}
                servers.append(entry)
            entry["pids"] += [[pid, proc_start_time(pid)] for pid in pids]

    def start_ranks(self) -> None:
        for rank in self.ranks:
            rank.pid = spawn_rank_holder(rank.index, self.ignore_term)
        self.record([r.pid for r in self.ranks])

    def start_up(self, spec: Any, facts: Any, values: dict[str, Any]) -> int:
        log, ranks, version = self.log, self.ranks, self.version
        log.ranks(ranks, lambda r: "Init torch distributed begin.")
        self.sleep(PHASES["dist"] / 2)
        log.ranks(ranks, lambda r: "sglang is using nccl==2.27.5")
        for rank in ranks:
            self.hold(rank, CTX_GIB)
        self.sleep(PHASES["dist"] / 2)
        log.ranks(ranks, lambda r: logfmt.init_dist_end(version, PHASES["dist"], CTX_GIB))
        baseline = min(r.baseline_gib for r in ranks)
        if len(ranks) > 1:
            for rank in ranks:
                local = rank.baseline_gib
                if baseline < local * 0.9:
                    return self.crash(
                        "dist",
                        "RuntimeError: The memory capacity is unbalanced. Some GPUs may be occupied by other "
                        f"processes. min_per_gpu_memory={baseline!r}, local_gpu_memory={local!r}, "
                        f"local_gpu_memory * 0.9={local * 0.9!r}",
                    )
        report = self.fit(spec, facts, baseline)
        weights = float(report.get("weights_gib") or 0.0)
        log.ranks(ranks, lambda r: logfmt.load_weight_begin(self.avail(r)))
        self.load_weights(weights)
        dtype = report_dtype(report, facts)
        log.ranks(
            ranks,
            lambda r: logfmt.load_weight_end(
                version, PHASES["weights"], facts.architecture, dtype, self.avail(r), weights
            ),
        )
        self.sleep(PHASES["pools"] / 2)
        if report.get("error"):
            return self.crash("pool", exception_text(str(report["error"]), "RuntimeError"))
        pools = PoolPlan.from_report(report, facts, spec)
        if not logfmt.is_new(version):
            log.line(logfmt.kv_dtype_line(dtype), 0)
        if pools.mamba is not None:
            size, conv, ssm, iss, icw = pools.mamba
            log.ranks(ranks, lambda r: logfmt.mamba_line(size, conv, ssm, iss, icw))
        log.ranks(ranks, lambda r: logfmt.kv_line(version, pools.tokens, pools.k_gib, pools.k_gib, dtype))
        for rank in ranks:
            self.hold(rank, rank.used_gib + pools.total_gib)
        self.sleep(PHASES["pools"] / 2)
        log.ranks(ranks, lambda r: logfmt.pool_end(self.avail(r)))
        if spec.speculative_algorithm and not logfmt.is_new(version):
            self.load_draft(report, pools, dtype)
        return self.capture_graphs(spec, report, pools, values)

    def fit(self, spec: Any, facts: Any, baseline: float) -> dict[str, Any]:
        from sgtui.core.fit import fit
        from sgtui.core.gpus import GpuSpec

        smallest = min(gpu_rows(self.state, self.visible_gpus()), key=lambda g: g.total_mib)
        gpu = GpuSpec(name=smallest.name, mib=smallest.total_mib)
        report = fit(spec, facts, gpu, n_gpus=len(self.visible_gpus()), version=self.version, free_gib=baseline)
        data: dict[str, Any] = report.to_json()
        return data

    def load_weights(self, weights: float) -> None:
        shards = self.shards
        t0 = time.monotonic()
        self.log.write(logfmt.shard_bar(0, shards, 0.0))
        base = {r.index: r.used_gib for r in self.ranks}
        for done in range(1, shards + 1):
            self.sleep(PHASES["weights"] / shards)
            for rank in self.ranks:
                self.hold(rank, base[rank.index] + weights * done / shards, util=5)
            self.log.write("\r" + logfmt.shard_bar(done, shards, (time.monotonic() - t0) * self.speed))
        self.log.write("\n\n")

    def load_draft(self, report: dict[str, Any], pools: PoolPlan, dtype: str) -> None:
        log = self.log
        draft_w = float(report.get("draft_weights_gib") or 0.0)
        log.ranks(self.ranks, lambda r: logfmt.load_weight_begin(self.avail(r)))
        self.sleep(PHASES["draft"] / 2)
        for rank in self.ranks:
            self.hold(rank, rank.used_gib + draft_w)
        log.ranks(
            self.ranks,
            lambda r: logfmt.load_weight_end(
                self.version, PHASES["draft"] / 2, pools.draft_arch, dtype, self.avail(r), draft_w
            ),
        )
        log.ranks(
            self.ranks,
            lambda r: logfmt.kv_line(self.version, pools.tokens, pools.draft_k_gib, pools.draft_k_gib, dtype),
        )
        for rank in self.ranks:
            self.hold(rank, rank.used_gib + 2 * pools.draft_k_gib)
        self.sleep(PHASES["draft"] / 2)
        log.ranks(self.ranks, lambda r: logfmt.pool_end(self.avail(r)))

    def capture_graphs(self, spec: Any, report: dict[str, Any], pools: PoolPlan, values: dict[str, Any]) -> int:
        log, version = self.log, self.version
        sizes = capture_sizes(spec, report)
        graph_gib = 0.30 + 0.02 * len(sizes)
        log.ranks(self.ranks, lambda r: logfmt.graph_begin(version, self.avail(r)))
        if spec.disable_cuda_graph:
            sizes = []
        t0 = time.monotonic()
        for done, bs in enumerate(reversed(sizes), start=1):
            if min(self.avail(r) for r in self.ranks) < graph_gib * done / len(sizes) + 0.05:
                log.raw("")
                free_mib = max(self.avail(self.ranks[0]) * 1024, 0.0)
                return self.crash(
                    "graph",
                    "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 512.00 MiB. "
                    f"GPU 0 has a total capacity of {self.ranks[0].total_gib:.2f} GiB of which "
                    f"{free_mib:.2f} MiB is free.\n" + GRAPH_HINTS,
                )
            self.sleep(PHASES["graphs"] / max(len(sizes), 1))
            for rank in self.ranks:
                self.hold(rank, rank.used_gib + graph_gib / len(sizes), util=60)
            elapsed = (time.monotonic() - t0) * self.speed
            bar = logfmt.capture_bar(done, len(sizes), bs, self.avail(self.ranks[0]), elapsed)
            log.write(("\r" if done > 1 else "") + bar)
        if sizes:
            log.write("\n")
        used = graph_gib if sizes else 0.0
        log.ranks(
            self.ranks,
            lambda r: logfmt.graph_end(version, PHASES["graphs"], used, self.avail(r), sizes),
        )
        for rank in self.ranks:
            self.hold(rank, rank.used_gib, util=0)
        chunked = spec.chunked_prefill_size or default_chunked_prefill(self.ranks[0].total_gib)
        log.line(
            logfmt.scheduler_summary(
                pools.tokens,
                chunked,
                spec.max_prefill_tokens,
                pools.max_running,
                pools.context_len,
                self.avail(self.ranks[0]),
            ),
            0,
        )
        return self.serve(spec, facts_path=str(spec.model_path), values=values)

    # --- HTTP ---------------------------------------------------------------------------------------

    def serve(self, spec: Any, facts_path: str, values: dict[str, Any]) -> int:
        log = self.log
        self.sleep(PHASES["http"])
        log.line(f"INFO:     Started server process [{os.getpid()}]")
        log.line("INFO:     Waiting for application startup.")
        log.line("INFO:     Application startup complete.")
        try:
            self.http = make_http_server(spec.port, self, facts_path, values)
        except OSError as exc:
            log.line(
                f"ERROR:    [Errno {exc.errno}] error while attempting to bind on address "
                f"('{spec.host}', {spec.port}): {os.strerror(exc.errno or 98).lower()}"
            )
            log.line("INFO:     Waiting for application shutdown.")
            log.line("INFO:     Application shutdown complete.")
            self.release()
            return 1
        threading.Thread(target=self.http.serve_forever, name="http", daemon=True).start()
        log.line(f"INFO:     Uvicorn running on http://{spec.host}:{spec.port} (Press CTRL+C to quit)")
        self.serving = True
        self.sleep(PHASES["warmup"] / 2)
        log.line(f'INFO:     127.0.0.1:{random.randint(40000, 60000)} - "GET /get_model_info HTTP/1.1" 200 OK')
        log.line(
            "Prefill batch. #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, "
            "#running-req: 0, #queue-req: 0, ",
            0,
        )
        self.sleep(PHASES["warmup"] / 2)
        log.line(f'INFO:     127.0.0.1:{random.randint(40000, 60000)} - "POST /generate HTTP/1.1" 200 OK')
        log.line(logfmt.READY_LINE)
        while True:
            time.sleep(3600)

    # --- endings ------------------------------------------------------------------------------------

    def fail_main(self, error: str) -> None:
        """An error raised in the launcher before any scheduler starts: traceback, exit 1."""
        for line in logfmt.traceback_lines(SITE.format(venv=self.venv), "args", self.version, error):
            self.log.raw(line)

    def crash(self, phase: str, error: str) -> int:
        """A scheduler failure: each rank's traceback, the launcher's sigquit line, SIGKILL of itself."""
        site = SITE.format(venv=self.venv)
        for rank in self.ranks:
            lines = logfmt.traceback_lines(site, phase, self.version, error)
            self.log.line("Scheduler hit an exception: " + "\n".join(lines) + "\n", rank.index)
        self.sleep(0.2)
        self.log.line(logfmt.SIGQUIT_LINE)
        self.release()
        os.kill(os.getpid(), signal.SIGKILL)
        return 137  # not reached

    def release(self) -> None:
        """Our processes are going away: their GPU memory is freed `release_delay` seconds from now."""
        pids = {r.pid for r in self.ranks if r.pid}
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if pids:
            with self.store.update() as state:
                mark_exited(state, pids, time.time())

    def shutdown(self) -> int:
        if self.serving:
            self.log.line("INFO:     Shutting down")
            self.log.line("INFO:     Waiting for application shutdown.")
            self.log.line("INFO:     Application shutdown complete.")
            self.log.line(f"INFO:     Finished server process [{os.getpid()}]")
        self.release()
        if self.serving:
            return 0
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
        return 143  # not reached


GRAPH_HINTS = (
    "Possible solutions:\n"
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
    "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)\n"
    "3. disable torch compile by not using --enable-torch-compile\n"
    "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)\n"
    "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose "
)


@dataclass
class PoolPlan:
    """The pool sizes the fit engine predicts, in the units the log prints."""

    tokens: int
    k_gib: float
    total_gib: float
    max_running: int
    context_len: int
    mamba: tuple[int, float, float, float | None, float | None] | None
    draft_k_gib: float
    draft_arch: str

    @classmethod
    def from_report(cls, report: dict[str, Any], facts: Any, spec: Any) -> PoolPlan:
        tokens = int(report.get("max_total_num_tokens") or 0)
        cell = float(report.get("kv_cell_bytes") or 0)
        page = spec.page_size or 1
        k_gib = (tokens + page) * cell / 2 / GIB
        max_running = int(report.get("max_running_requests") or 1)
        context_len = int(report.get("context_length") or facts.context_length)
        draft_tokens = spec.speculative_num_draft_tokens or (4 if spec.speculative_algorithm else 0)
        req_gib = (max_running + 1) * (context_len + 4 + draft_tokens) * 4 / GIB
        mamba = None
        mamba_gib = 0.0
        m = report.get("mamba")
        if isinstance(m, dict):
            state = float(m.get("state_gib") or 0.0)
            spec_state = m.get("spec_state_gib")
            conv_share = conv_fraction(facts, spec.tp_size)
            inter = float(spec_state) if spec_state else None
            mamba = (
                int(m.get("max_mamba_cache_size") or 0),
                state * conv_share,
                state * (1 - conv_share),
                inter * (1 - conv_share) if inter is not None else None,
                inter * conv_share if inter is not None else None,
            )
            mamba_gib = state + (inter or 0.0)
        full_layers = max(int(getattr(facts, "full_attention_layers", facts.num_layers)), 1)
        draft_layers = 1 if getattr(facts, "is_gdn_hybrid", False) else max(getattr(facts, "mtp_layers", 1), 1)
        draft_k = (tokens + page) * cell / full_layers * draft_layers / 2 / GIB
        return cls(
            tokens=tokens,
            k_gib=k_gib,
            total_gib=2 * k_gib + mamba_gib + req_gib,
            max_running=max_running,
            context_len=context_len,
            mamba=mamba,
            draft_k_gib=draft_k,
            draft_arch=(facts.architecture.replace("ForConditionalGeneration", "ForCausalLM") + "MTP"),
        )


def conv_fraction(facts: Any, tp: int) -> float:
    """Share of one Mamba slot taken by the conv state (the rest is the SSM state)."""
    lin = getattr(facts, "linear", None)
    if lin is None:
        return 0.05
    conv_dim = lin.value_head_dim * lin.num_value_heads + 2 * lin.num_key_heads * lin.key_head_dim
    conv = conv_dim / tp * (lin.conv_kernel_dim - 1) * 2
    ssm_bytes = 2 if (lin.ssm_dtype or "float32") in ("bfloat16", "float16") else 4
    ssm = lin.num_value_heads / tp * lin.value_head_dim * lin.key_head_dim * ssm_bytes
    return conv / (conv + ssm)


def report_dtype(report: dict[str, Any], facts: Any) -> str:
    return str(report.get("dtype") or facts.dtype or "bfloat16").removeprefix("torch.")


def default_chunked_prefill(gpu_gib: float) -> int:
    if gpu_gib < 35:
        return 2048
    if gpu_gib < 60:
        return 4096
    return 8192 if gpu_gib < 160 else 16384


def capture_sizes(spec: Any, report: dict[str, Any]) -> list[int]:
    """Decode batch sizes captured as CUDA graphs: SGLang's list, up to max_running_requests."""
    limit = spec.cuda_graph_max_bs or 32
    limit = min(limit, int(report.get("max_running_requests") or limit))
    sizes = [1, 2, 4, 8, 12, *range(16, 257, 8)]
    picked = [s for s in sizes if s <= limit]
    if limit not in picked:
        picked.append(limit)
    return sorted(set(picked))


def exception_text(error: str, default_type: str) -> str:
    """The error as Python prints it: `Type: message` (fit reports may give just the message)."""
    head = error.split(":", 1)[0]
    if head.replace(".", "").isidentifier() and (head.endswith("Error") or head.endswith("Exception")):
        return error
    if error.startswith("Loaded weights leave") or "is not compatible with radix cache" in error:
        return f"ValueError: {error}"
    return f"{default_type}: {error}"


def server_arg_notes(spec: Any, facts: Any, version: str) -> list[str]:
    """Lines ServerArgs logs while it adjusts the arguments, before the server_args line."""
    notes = []
    arch = facts.architecture
    hybrid = getattr(facts, "is_gdn_hybrid", False)
    if spec.speculative_algorithm and hybrid and logfmt.version_tuple(version) <= (0, 5, 9):
        notes.append(
            f"Disabling radix cache since speculative decoding for {arch} is not supported with radix cache yet."
        )
    if spec.speculative_algorithm and spec.max_running_requests is None:
        notes.append(
            "Max running requests is reset to 48 for speculative decoding. You can override this by explicitly "
            "setting --max-running-requests."
        )
    return notes


def radix_conflict(spec: Any, facts: Any, version: str) -> str | None:
    """0.5.11 refuses speculative decoding on hybrid models with the radix cache under no_buffer."""
    if logfmt.version_tuple(version) != (0, 5, 11):
        return None
    strategy = (spec.mamba_strategy or "auto").lower()
    if spec.speculative_algorithm and getattr(facts, "is_gdn_hybrid", False) and not spec.disable_radix_cache:
        if strategy in ("auto", "no_buffer"):
            return (
                f"ValueError: Speculative decoding for {facts.architecture} is not compatible with radix cache "
                "when using --mamba-scheduler-strategy no_buffer.To use radix cache with speculative decoding, "
                "please use --mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1."
            )
    return None


def model_folder(model_path: str | None) -> Path | None:
    """A local model folder as given, else the built-in catalogue entry named like its last component."""
    if not model_path:
        return None
    given = Path(model_path)
    if (given / "config.json").is_file():
        return given
    name = given.name.lower()
    for entry in MODELS_DIR.iterdir() if MODELS_DIR.is_dir() else ():
        if entry.name.lower() == name and (entry / "config.json").is_file():
            return entry
    return None


def shard_count(folder: Path | None) -> int:
    """Files of the checkpoint (distinct values of the safetensors index's weight_map)."""
    if folder is None:
        return 1
    index = folder / "model.safetensors.index.json"
    try:
        data = json.loads(index.read_text(encoding="utf-8"))
        return max(1, len(set(data.get("weight_map", {}).values())))
    except (OSError, ValueError):
        return 1


def spawn_rank_holder(rank: int, ignore_term: bool) -> int:
    """A child standing for one TP scheduler: it only holds GPU memory, and dies with the launcher."""
    pid = os.fork()
    if pid:
        return pid
    try:
        with contextlib.suppress(OSError):
            Path("/proc/self/comm").write_text(f"sglang::sched{rank}"[:15])
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
        signal.signal(signal.SIGTERM, signal.SIG_IGN if ignore_term else signal.SIG_DFL)
        while True:
            time.sleep(3600)
    finally:
        os._exit(0)


def make_http_server(
    port: int, standin: StandIn, model_path: str, values: dict[str, Any]
) -> http.server.ThreadingHTTPServer:
    log = standin.log
    info = {
        "model_path": model_path,
        "tokenizer_path": model_path,
        "is_generation": True,
        "preferred_sampling_params": None,
        "weight_version": "default",
        "has_image_understanding": False,
        "has_audio_understanding": False,
        "model_type": None,
        "architectures": None,
    }

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _send(self, code: int, body: bytes, ctype: str = "application/json") -> None:
            self.send_response(code)
            self.send_header("content-type", ctype)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 - the name http.server dispatches to
            path = self.path.split("?", 1)[0]
            if path in ("/health", "/health_generate"):
                self._send(200, b"")
            elif path == "/get_model_info":
                self._send(200, json.dumps(info).encode())
            elif path == "/get_server_info":
                body = {k.replace("-", "_"): v for k, v in values.items()} | {"version": standin.version}
                self._send(200, json.dumps(body, default=str).encode())
            elif path == "/v1/models":
                served = values.get("--served-model-name") or model_path
                self._send(200, json.dumps({"object": "list", "data": [{"id": served, "object": "model"}]}).encode())
            else:
                self._send(404, b'{"detail":"Not Found"}')

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("content-length") or 0)
            self.rfile.read(length)
            if self.path.split("?", 1)[0] == "/generate":
                self._send(200, json.dumps({"text": " Paris.", "meta_info": {"finish_reason": "stop"}}).encode())
            else:
                self._send(404, b'{"detail":"Not Found"}')

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            host, port = self.client_address[:2]
            code = str(args[1]) if len(args) > 1 else ""
            reason = {"200": "OK", "404": "Not Found"}.get(code, "")
            log.line(f'INFO:     {host}:{port} - "{self.requestline}" {code} {reason}'.rstrip())

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler, bind_and_activate=False)
    server.daemon_threads = True
    server.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        server.server_bind()
        server.server_activate()
    except OSError:
        server.server_close()
        raise
    return server


def main(argv: Sequence[str], state_dir: str | Path) -> int:
    """`python -m sglang.launch_server ARGS` inside the sim."""
    standin = StandIn(Path(state_dir), list(argv), sys.stdout)

    def on_term(signum: int, frame: object) -> None:
        raise Terminated

    signal.signal(signal.SIGTERM, signal.SIG_IGN if standin.ignore_term else on_term)
    try:
        return standin.run()
    except Terminated:
        return standin.shutdown()
    except KeyboardInterrupt:
        standin.release()
        return 130
    finally:
        if standin.http is not None:
            standin.http.server_close()
