"""`sgtui status RUN_ID (--profile P | --host H [--target T]) [--json]`: is the run's server answering,
does generation work, and what is it doing (DESIGN.md has the JSON contract).

Health combines the run's process, `/health` and the release's model info endpoint (remote/health.py);
after ready one short completion (the smoke request) must answer, else the run is "unhealthy". The
serving numbers come from two `/metrics` scrapes one second apart with `--enable-metrics`, else from the
log's last batch lines; each says its source and age. Exit 0 when ready, 1 otherwise."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sgtui.core.serving.state import ServingSnapshot, ServingStatus

HELP = "is a run's server answering and generating; its tokens/s, queue and KV use (--json for scripts)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from sgtui.commands.serving_run import add_run_arguments

    add_run_arguments(parser)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from sgtui.commands.serving_run import check_args

    check_args(args)
    return asyncio.run(_status(args))


async def _status(args: argparse.Namespace) -> int:
    import json
    import time

    from sgtui.commands.serving_run import open_run
    from sgtui.remote.connection import RemoteError
    from sgtui.remote.serving import read_status

    served = await open_run(args, "status")
    if isinstance(served, int):
        return served
    try:
        status = await read_status(
            served.conn, served.manager, served.record, address=served.address, version=served.version
        )
    except RemoteError as exc:
        print(f"sgtui status: {exc}", file=sys.stderr)
        return 1
    finally:
        await served.conn.close()
    now = time.monotonic()
    if args.json:
        print(json.dumps(status.to_json(now), ensure_ascii=False))
    else:
        for line in status_lines(status, now):
            print(line)
    return 0 if status.health == "ready" else 1


def status_lines(status: ServingStatus, now: float) -> list[str]:
    lines = [f"{status.id}: {status.health} ({status.reason})"]
    if status.endpoints:
        lines.append("  endpoints: " + ", ".join(f"{k} {v}" for k, v in status.endpoints.items()))
    if status.smoke is not None:
        s = status.smoke
        lines.append(f"  smoke: answers in {s.seconds:.2f} s" if s.ok else f"  smoke: failed: {s.error}")
    if status.metrics is not None:
        lines += ["  " + line for line in snapshot_lines(status.metrics, now)]
    return lines


def snapshot_lines(m: ServingSnapshot, now: float) -> list[str]:
    """The numbers for people, each group with its source and age ("from metrics, 1.0s ago")."""
    from sgtui.core.ages import age_text

    def num(x: float | None, fmt: str = "{:.1f}") -> str:
        return "-" if x is None else fmt.format(x)

    out = [
        f"from {m.source}, {age_text(m.age_s(now))} ago:",
        f"  tokens/s: generation {num(m.gen_tokens_per_s)}, prompt {num(m.prompt_tokens_per_s)}",
        f"  requests: running {num(m.running, '{}')}, queued {num(m.queued, '{}')}",
        f"  KV cache: {num(None if m.kv_usage is None else 100 * m.kv_usage, '{:.0f}%')} used, "
        f"prefix cache hit {num(None if m.cache_hit_rate is None else 100 * m.cache_hit_rate, '{:.0f}%')}",
    ]
    for label, p in (("TTFT", m.ttft_ms), ("ITL", m.itl_ms), ("e2e", m.e2e_ms)):
        if p.p50 is not None:
            out.append(f"  {label} ms: p50 {p.p50:.1f}, p99 {num(p.p99)}")
    if m.spec_accept_length is not None:
        out.append(f"  speculative accept length: {m.spec_accept_length:.2f}")
    if m.retracted:
        out.append(f"  retracted requests: {m.retracted} (KV cache pool full; raise --mem-fraction-static)")
    return out
