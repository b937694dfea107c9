"""The SGLang stand-in: `python -m sglang.launch_server ...` inside the simulated host.

It parses the real flags (sgtui's flag table, for the installed SGLang version), asks sgtui's fit engine
what SGLang would do with the GPUs it finds in the host state, and then acts it out: one process per TP
rank holds fake GPU memory that rises as weights load and pools are allocated, and the launcher writes a
log in the version's wording with realistic pacing (SGTUI_SIM_SPEED divides every delay). A launch the
fit engine says fails dies the way SGLang dies: the scheduler traceback, "Received sigquit from a child
process...", and a SIGKILL of the launcher by itself. A ready server answers /health, the info endpoints,
/metrics and completions (`http_api.py`) on 127.0.0.1:--port until SIGTERM (or only SIGKILL, when the
scenario says it ignores TERM).
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sgtui.core.sglang.windows import serving_rules
from sgtui.sim import logfmt
from sgtui.sim.http_api import make_http_server
from sgtui.sim.plan import model_folder, radix_conflict, server_arg_notes, shard_count
from sgtui.sim.ports import PortMap
from sgtui.sim.serving_engine import batch_heading
from sgtui.sim.standin_launch import PHASES, Log, Terminated
from sgtui.sim.standin_startup import Startup

if TYPE_CHECKING:
    from sgtui.core.sglang.flags import LaunchSpec


class StandIn(Startup):
    """One simulated launch: its arguments read as SGLang reads them, the startup (`Startup`), then the
    HTTP API; the processes, memory and endings are `standin_launch.Launch`'s."""

    def run(self) -> int:
        from sgtui.core.errors import UserError

        self.record([os.getpid()])
        try:
            from sgtui.core.sglang.flags import parse_argv
            from sgtui.sim.flagtable import sim_table

            parsed = parse_argv(self.argv, sim_table(self.version))  # the sim's own parser, as SGLang
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
        if note := parsed.values.get("--sim-log-note"):
            self.log.line(f"sim note: {note}")
        if (err := radix_conflict(spec, facts, self.version)) is not None:
            self.fail_main(err)
            return 1
        if not self.place_ranks(spec.tp_size // self.nnodes):
            return self.crash("dist", "RuntimeError: CUDA error: invalid device ordinal")
        self.start_ranks()
        self.sleep(PHASES["args"] / 2)
        failed = self.start_up(spec, facts, parsed.values)
        if failed is not None:
            return failed
        if self.node_rank >= 1:
            return self.serve_worker(spec.port)
        return self.serve(spec, facts_path=str(spec.model_path), values=parsed.values)

    # --- HTTP ---------------------------------------------------------------------------------------

    def serve_worker(self, port: int) -> int:
        """A node of rank >= 1 runs no tokenizer or HTTP API: SGLang starts a silent /health server
        (uvicorn at log level warning) and waits on its schedulers, printing nothing more."""
        with contextlib.suppress(OSError):
            own_port = PortMap(self.store.dir).resolve(port)  # the sim's own port, as for node 0
            self.http = make_http_server(own_port, lambda *line: None, self.version, "", {})
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
            # as the real 0.5.23 server does: the bind error, then it hangs in the lifespan shutdown with
            # its scheduler alive (and its memory held) until someone stops it
            log.line("INFO:     Waiting for application shutdown.")
            while True:
                time.sleep(3600)
        threading.Thread(target=self.http.serve_forever, name="http", daemon=True).start()
        log.line(f"INFO:     Uvicorn running on http://{spec.host}:{spec.port} (Press CTRL+C to quit)")
        self.serving = True
        self.sleep(PHASES["warmup"] / 2)
        info = serving_rules(self.version).model_info_path  # the warmup asks the release's own name
        log.line(f'INFO:     127.0.0.1:{random.randint(40000, 60000)} - "GET {info} HTTP/1.1" 200 OK')
        log.line(
            f"{batch_heading(self.version, 'Prefill')}#new-seq: 1, #new-token: 6, #cached-token: 0, "
            "token usage: 0.00, #running-req: 0, #queue-req: 0, ",
            0,
        )
        self.sleep(PHASES["warmup"] / 2)
        log.line(f'INFO:     127.0.0.1:{random.randint(40000, 60000)} - "POST /generate HTTP/1.1" 200 OK')
        if logfmt.is_new(self.version):  # 0.5.23: http_server._freeze_gc_after_server_warmup
            log.line(
                f'INFO:     127.0.0.1:{random.randint(40000, 60000)} - "POST /freeze_gc HTTP/1.1" 200 OK'
            )
        log.line(logfmt.READY_LINE)
        while True:
            time.sleep(3600)


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
