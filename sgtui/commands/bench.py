"""`sgtui bench RUN_ID (--profile P | --host H [--target T]) [--requests N] [--concurrency C]
[--input-len L] [--output-len L] [--json]`: a bounded load test of the run's server (DESIGN.md).

SGLang's own `sglang.bench_serving` runs on the target in the run's environment where it is installed
(its figures are the ones SGLang's docs quote); else sgtui's built-in streaming client runs over the SSH
tunnel. Either way the report is saved beside the run (`RUN_DIR/bench-STAMP.json`, 0600); `--list` prints
the saved ones. Exit 0 when every request completed, 1 otherwise."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sgtui.commands.serving_run import ServedRun
    from sgtui.core.serving.bench import BenchReport
    from sgtui.remote.loadgen import Progress

HELP = "a bounded load test of a run's server: throughput, TTFT and ITL percentiles (--json for scripts)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from sgtui.commands.serving_run import add_run_arguments

    add_run_arguments(parser)
    parser.add_argument("--requests", type=int, default=20, help="how many requests (default 20)")
    parser.add_argument("--concurrency", type=int, default=4, help="at most this many at once (default 4)")
    parser.add_argument("--input-len", type=int, default=128, help="prompt tokens per request (default 128)")
    parser.add_argument("--output-len", type=int, default=64, help="new tokens per request (default 64)")
    parser.add_argument("--time-limit", type=float, default=300.0, help="stop after this many seconds")
    parser.add_argument(
        "--client", choices=("auto", "sglang", "builtin"), default="auto",
        help="auto: sglang.bench_serving where the run's environment has it, else the built-in client",
    )  # fmt: skip
    parser.add_argument("--list", action="store_true", help="list the reports saved beside the run")


def run(args: argparse.Namespace) -> int:
    import asyncio

    from sgtui.commands.serving_run import check_args
    from sgtui.core.errors import UserError
    from sgtui.core.serving.bench import check_bench_args

    check_args(args)
    check_bench_args(args.requests, args.concurrency, args.input_len, args.output_len)
    if not 1 <= args.time_limit <= 3600:
        raise UserError(f"--time-limit {args.time_limit:g}: use 1..3600 seconds (a load probe is bounded)")
    return asyncio.run(_bench(args))


async def run_bench(served: ServedRun, args: argparse.Namespace, on_progress: Progress | None) -> BenchReport:
    from sgtui.remote.loadgen import load_probe
    from sgtui.remote.serving import run_port

    record = served.record
    return await load_probe(
        served.conn, served.manager.target, record.run_dir, served.python, run_port(record.argv),
        served.address, requests=args.requests, concurrency=args.concurrency, input_len=args.input_len,
        output_len=args.output_len, time_limit=args.time_limit, client=args.client, env=record.env,
        on_progress=on_progress,
    )  # fmt: skip


async def _bench(args: argparse.Namespace) -> int:
    import json

    from sgtui.commands.serving_run import open_run
    from sgtui.remote.connection import RemoteError
    from sgtui.remote.loadgen import list_reports

    served = await open_run(args, "bench")
    if isinstance(served, int):
        return served
    try:
        if args.list:
            reports = await list_reports(served.conn, served.manager.target, served.record.run_dir)
            if args.json:
                print(json.dumps([r.saved_json() for r in reports], ensure_ascii=False))
            else:
                for r in reports:
                    print(report_line(r))
                if not reports:
                    print(f"no reports saved beside {served.record.id}")
            return 0
        status = await served.manager.status(served.record)
        if status.state.value != "running":
            print(
                f"sgtui bench: run {served.record.id} is {status.state.value}; nothing to load",
                file=sys.stderr,
            )
            return 1
        # progress on a terminal only: redirected, `\r` rewrites would fill the file with every count
        report = await run_bench(served, args, _progress if not args.json and sys.stderr.isatty() else None)
    except (RemoteError, OSError, ValueError) as exc:
        print(f"sgtui bench: {exc}", file=sys.stderr)
        return 1
    finally:
        await served.conn.close()
    if args.json:
        print(json.dumps(report.to_json(), ensure_ascii=False))
        for error in report.errors:
            print(f"sgtui bench: {error}", file=sys.stderr)
    else:
        print(report_line(report))
        for error in report.errors:
            print(f"  error: {error}")
    return 0 if report.ok else 1


def report_line(r: BenchReport) -> str:
    def n(x: float | None) -> str:
        return "-" if x is None else f"{x:.1f}"

    return (
        f"{r.started or ''} {r.tool}: {r.completed}/{r.requests} in {r.duration_s:.1f} s "
        f"(concurrency {r.concurrency or '?'}); {n(r.request_throughput)} req/s, "
        f"{n(r.output_tokens_per_s)} output tok/s, {n(r.input_tokens_per_s)} input tok/s; "
        f"TTFT p50 {n(r.ttft_ms.p50)} p99 {n(r.ttft_ms.p99)} ms; ITL p50 {n(r.itl_ms.p50)} "
        f"p99 {n(r.itl_ms.p99)} ms; e2e p50 {n(r.e2e_ms.p50)} p99 {n(r.e2e_ms.p99)} ms"
        + (f"; saved {r.report_path}" if r.report_path else "")
    ).strip()


def _progress(done: int, total: int) -> None:
    print(f"\r{done}/{total} requests", end="" if done < total else "\n", file=sys.stderr, flush=True)
