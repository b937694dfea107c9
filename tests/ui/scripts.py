"""Deterministic SGLang 0.5.9 startup logs (fixed timestamps) for the UI tests, worded by sim.logfmt."""

from __future__ import annotations

import time

from sgtui.sim import logfmt

T0 = 1_800_000_000.0
VERSION = "0.5.9"
SITE = "/opt/sglang/.venv/lib/python3.12/site-packages"
NOT_ENOUGH = (
    "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
    "Current value: self.server_args.mem_fraction_static=0.85"
)


def _at(dt: float, rank: int | None, body: str) -> str:
    """SGLang's `[date time TPn] ` prefix, in UTC so that snapshots do not depend on the time zone."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(T0 + dt))
    return f"[{stamp}{'' if rank is None else f' TP{rank}'}] {body}"


def _start() -> list[str]:
    lines = [_at(0, None, logfmt.server_args_line({"model_path": "/models/Qwen3.6-27B", "tp_size": 2}))]
    for r in (0, 1):
        lines.append(_at(6, r, logfmt.init_dist_end(VERSION, 5.8, 0.52)))
        lines.append(_at(6.5, r, logfmt.load_weight_begin(46.99)))
    for r in (0, 1):
        lines.append(
            _at(
                92,
                r,
                logfmt.load_weight_end(
                    VERSION, 85.1, "Qwen3_5ForConditionalGeneration", "bfloat16", 21.10, 25.89
                ),
            )
        )
    return lines


def failing_log() -> list[str]:
    lines = _start()
    for r in (0, 1):
        lines += [_at(93, r, line) for line in logfmt.traceback_lines(SITE, "pool", VERSION, NOT_ENOUGH)]
    lines.append(_at(94, None, logfmt.SIGQUIT_LINE))
    return lines


def ready_log() -> list[str]:
    lines = _start()
    for r in (0, 1):
        lines.append(_at(93, r, logfmt.kv_line(VERSION, 248120, 3.79, 3.79, "bfloat16")))
        lines.append(_at(93.5, r, logfmt.pool_end(12.1)))
        lines.append(_at(94, r, logfmt.graph_begin(VERSION, 12.0)))
        lines.append(_at(131, r, logfmt.graph_end(VERSION, 37.0, 1.9, 10.1, [1, 2, 4, 8])))
    lines.append(_at(132, 0, logfmt.scheduler_summary(248120, 4096, 16384, 8, 32768, 10.1)))
    lines.append(_at(133, None, "Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)"))
    lines.append(_at(135, None, logfmt.READY_LINE))
    return lines
