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
import os
import random
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from sgtui.sim import logfmt, rendezvous
from sgtui.sim.http_api import make_http_server
from sgtui.sim.plan import (
    GRAPH_HINTS,
    PoolPlan,
    capture_sizes,
    cuda_oom_text,
    default_chunked_prefill,
    exception_text,
    model_folder,
    radix_conflict,
    report_dtype,
    server_arg_notes,
    shard_count,
)
from sgtui.sim.ports import PortMap
from sgtui.sim.state import StateStore, gpu_rows, mark_exited, proc_start_time, set_holding

if TYPE_CHECKING:
    from sgtui.core.flags import LaunchSpec
    from sgtui.core.model import ModelFacts

SPEED_ENV = "SGTUI_SIM_SPEED"
VENV_ENV = "SGTUI_SIM_VENV"  # set by the venv's python wrapper: the install dir as the container sees it
CTX_GIB = 0.99  # CUDA context + NCCL per rank, taken before the baseline measurement
SITE = "{venv}/lib/python3.12/site-packages"

# Seconds of each phase at speed 1 (about 20 s to ready, like a small model on a fast disk).
PHASES = {
    "args": 1.0,
    "dist": 1.5,
    "weights": 8.0,
    "pools": 1.0,
    "draft": 1.0,
    "graphs": 4.0,
    "http": 1.0,
    "warmup": 1.0,
}


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
        self.state = self.store.refresh()  # memory of runs that ended long enough ago is free again
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
        self.nnodes = 1
        self.node_rank = 0
        self.meeting = rendezvous.Meeting(self.state, self.speed)

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
        self.nnodes = max(int(parsed.values.get("--nnodes") or 1), 1)
        self.node_rank = int(parsed.values.get("--node-rank") or 0)
        facts_dir = model_folder(spec.model_path)
        if facts_dir is None:
            self.fail_main(
                f"OSError: Can't load the configuration of '{spec.model_path}'. "
                f"Make sure '{spec.model_path}' is the correct path to a directory containing a "
                "config.json file"
            )
            return 1
        from sgtui.core.model import load_model_facts

        facts = load_model_facts(facts_dir)
        self.shards = shard_count(facts_dir)
        self.sleep(PHASES["args"] / 2)
        for note in server_arg_notes(spec, facts, self.version):
            self.log.line(note)
        self.log.line(logfmt.server_args_line(parsed.values, self.version))
        if (err := radix_conflict(spec, facts, self.version)) is not None:
            self.fail_main(err)
            return 1
        if not self.place_ranks(spec.tp_size // self.nnodes):
            return self.crash("dist", "RuntimeError: CUDA error: invalid device ordinal")
        self.start_ranks()
        self.sleep(PHASES["args"] / 2)
        return self.start_up(spec, facts, parsed.values)

    def place_ranks(self, tp: int) -> bool:
        rows = gpu_rows(self.state, self.visible_gpus())
        if tp > len(rows):
            self.ranks = [Rank(0, rows[0].index if rows else 0, 0.0, 0.0)]
            return False
        first = self.node_rank * tp  # TP ranks of this node: SGLang's _calculate_rank_ranges
        self.ranks = [
            Rank(first + i, r.index, r.total_mib / 1024, r.free_mib / 1024) for i, r in enumerate(rows[:tp])
        ]
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

    def start_up(self, spec: LaunchSpec, facts: ModelFacts, values: dict[str, Any]) -> int:
        log, ranks, version = self.log, self.ranks, self.version
        log.ranks(ranks, lambda r: "Init torch distributed begin.")
        if self.nnodes > 1:
            try:
                self.meeting.meet(values, spec.port, [r.index for r in ranks], spec.tp_size * spec.pp_size)
            except rendezvous.DistInitError as exc:
                return self.crash("dist", exc.text)
        self.sleep(PHASES["dist"] / 2)
        log.ranks(ranks, lambda r: "sglang is using nccl==2.27.5")
        for rank in ranks:
            self.hold(rank, CTX_GIB)
        self.sleep(PHASES["dist"] / 2)
        log.ranks(ranks, lambda r: logfmt.init_dist_end(version, PHASES["dist"], CTX_GIB))
        baseline = min(r.baseline_gib for r in ranks)
        starved = next((r for r in ranks if r.free_gib < CTX_GIB), None)
        if starved is not None:
            return self.crash(
                "dist",
                "RuntimeError: CUDA error: out of memory\nCUDA kernel errors might be asynchronously "
                "reported at some other API call, so the stacktrace below might be incorrect.\n"
                "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
            )
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
        try:
            report = self.fit(spec, facts, baseline)
        except Exception as exc:  # a fault in sgtui's own fit engine: show it as the scheduler's death
            trace = traceback.format_exc().rstrip("\n").splitlines()
            return self.crash("pool", f"{type(exc).__name__}: {exc}", trace)
        weights = float(report.get("weights_gib") or 0.0)
        log.ranks(ranks, lambda r: logfmt.load_weight_begin(self.avail(r)))
        if (oom := self.load_weights(weights)) is not None:
            return self.crash("weights", oom)
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
            log.line(logfmt.kv_dtype_line(dtype), ranks[0].index)
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

    def fit(self, spec: LaunchSpec, facts: ModelFacts, baseline: float) -> dict[str, Any]:
        from sgtui.core.fit import fit
        from sgtui.core.gpus import GpuSpec

        smallest = min(gpu_rows(self.state, self.visible_gpus()), key=lambda g: g.total_mib)
        gpu = GpuSpec(name=smallest.name, mib=smallest.total_mib)
        # TP across nodes: each GPU holds 1/tp of the model, whichever node it is on
        n_gpus = len(self.visible_gpus()) * self.nnodes
        report = fit(spec, facts, gpu, n_gpus=n_gpus, version=self.version, free_gib=baseline)
        data: dict[str, Any] = report.to_json()
        return data

    def load_weights(self, weights: float) -> str | None:
        """Shard by shard, memory rising on every rank; the CUDA OOM text when a shard does not fit."""
        shards = self.shards
        t0 = time.monotonic()
        self.log.write(logfmt.shard_bar(0, shards, 0.0))
        base = {r.index: r.used_gib for r in self.ranks}
        step = weights / shards
        for done in range(1, shards + 1):
            self.sleep(PHASES["weights"] / shards)
            short = next((r for r in self.ranks if self.avail(r) < step + 0.05), None)
            if short is not None:
                self.log.write("\n")
                return cuda_oom_text(short.index, short.total_gib, self.avail(short), short.used_gib, step)
            for rank in self.ranks:
                self.hold(rank, base[rank.index] + step * done, util=5)
            self.log.write("\r" + logfmt.shard_bar(done, shards, (time.monotonic() - t0) * self.speed))
        self.log.write("\n\n")
        return None

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

    def capture_graphs(
        self, spec: LaunchSpec, report: dict[str, Any], pools: PoolPlan, values: dict[str, Any]
    ) -> int:
        if not spec.disable_cuda_graph:
            failed = self.capture(spec, report)
            if failed is not None:
                return failed
        chunked = spec.chunked_prefill_size or default_chunked_prefill(self.ranks[0].total_gib)
        self.log.line(
            logfmt.scheduler_summary(
                pools.tokens,
                chunked,
                spec.max_prefill_tokens,
                pools.max_running,
                pools.context_len,
                self.avail(self.ranks[0]),
            ),
            self.ranks[0].index,
        )
        if self.node_rank >= 1:
            return self.serve_worker(spec.port)
        return self.serve(spec, facts_path=str(spec.model_path), values=values)

    def capture(self, spec: LaunchSpec, report: dict[str, Any]) -> int | None:
        """Decode CUDA graphs, largest batch first, each taking a little memory; a crash when it runs out."""
        log, version = self.log, self.version
        sizes = capture_sizes(spec, report)
        graph_gib = 0.30 + 0.02 * len(sizes)
        log.ranks(self.ranks, lambda r: logfmt.graph_begin(version, self.avail(r)))
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
        log.write("\n")
        log.ranks(
            self.ranks,
            lambda r: logfmt.graph_end(version, PHASES["graphs"], graph_gib, self.avail(r), sizes),
        )
        for rank in self.ranks:
            self.hold(rank, rank.used_gib, util=0)
        return None

    # --- HTTP ---------------------------------------------------------------------------------------

    def serve_worker(self, port: int) -> int:
        """A node of rank >= 1 runs no tokenizer or HTTP API: SGLang starts a silent /health server
        (uvicorn at log level warning) and waits on its schedulers, printing nothing more."""
        with contextlib.suppress(OSError):
            own_port = PortMap(self.store.dir).resolve(port)  # the sim's own port, as for node 0
            self.http = make_http_server(own_port, lambda line: None, self.version, "", {})
            threading.Thread(target=self.http.serve_forever, name="health", daemon=True).start()
        while True:
            time.sleep(3600)

    def serve(self, spec: LaunchSpec, facts_path: str, values: dict[str, Any]) -> int:
        log = self.log
        self.sleep(PHASES["http"])
        log.line(f"INFO:     Started server process [{os.getpid()}]")
        log.line("INFO:     Waiting for application startup.")
        log.line("INFO:     Application startup complete.")
        try:
            # the sim's own port for the one asked for (sgtui.sim.ports): two sims never collide
            own_port = PortMap(self.store.dir).resolve(spec.port)
            self.http = make_http_server(own_port, self.log.line, self.version, facts_path, values)
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
        log.line(
            f'INFO:     127.0.0.1:{random.randint(40000, 60000)} - "GET /get_model_info HTTP/1.1" 200 OK'
        )
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

    def crash(self, phase: str, error: str, lines: list[str] | None = None) -> int:
        """A scheduler failure: each rank's traceback, the launcher's sigquit line, SIGKILL of itself."""
        site = SITE.format(venv=self.venv)
        lines = lines or logfmt.traceback_lines(site, phase, self.version, error)
        for rank in self.ranks:
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
