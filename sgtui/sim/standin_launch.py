"""One simulated launch's processes, fake GPU memory and endings: the TP ranks (one child process each,
holding memory in the host state), the log writer, the pacing (SGTUI_SIM_SPEED divides every delay), and
how a launch ends (SGLang's crash: tracebacks, the sigquit line, SIGKILL of the launcher; or SIGTERM)."""

from __future__ import annotations

import contextlib
import ctypes
import http.server
import importlib.metadata
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from sgtui.sim import logfmt, rendezvous
from sgtui.sim.state import StateStore, gpu_rows, mark_exited, proc_start_time, set_holding

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


class Launch:
    """One simulated launch: state, ranks, timing and the log, and how it ends."""

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
            # SGLang's SignalHandler.sigterm_handler and TokenizerManager.sigterm_watchdog (0.5.23
            # tokenizer_manager.py): the handler is called without arguments (loop.add_signal_handler),
            # the watchdog looks every 5 s, drains, and the schedulers are stopped by the main process
            signal.signal(signal.SIGTERM, lambda signum, frame: None)  # a second TERM changes nothing
            self.log.line("SIGTERM received. signum=None frame=None. Draining requests and shutting down...")
            self.sleep(1.0)
            self.log.line(
                "Gracefully exiting... Remaining number of requests 0. Remaining requests remaining_rids=[]."
            )
            self.log.line(
                f"kill_process_tree called: parent_pid={os.getpid()}, include_parent=False, pid={os.getpid()}"
            )
            self.release()
            self.log.line("INFO:     Shutting down")
            self.log.line("INFO:     Waiting for application shutdown.")
            self.log.line("INFO:     Application shutdown complete.")
            self.log.line(f"INFO:     Finished server process [{os.getpid()}]")
            self.log.line(  # as the real 0.5.23 log of a TERM to the main process ends
                f"kill_process_tree called: parent_pid={os.getpid()}, include_parent=False, pid={os.getpid()}"
            )
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
