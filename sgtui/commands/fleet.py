"""`sgtui fleet [--json] [--once] [--interval S] [--host NAME ...]`: every host's GPUs and runs at once.

Every configured host (or those named) is connected (at most `--concurrency` handshakes at a time) and
streams its GPUs over one long-lived `nvidia-smi -lms` channel from the moment it is up (`Fleet.watch`),
so the first hosts report while the rest connect. `--json` prints one object per host per sample,
`{host, state, age_s, error, gpus: [{index, name, used_mib, total_mib, util}], runs: [{id, state, health,
gen_tokens_per_s}]}` (DESIGN.md); a host that cannot be reached gets one object when its state changes.
Without `--json`, a compact table of all hosts per interval. `--once`: one sample of each host (connect,
one nvidia-smi query, its runs), printed as each answers; exit 0 when all answered, else 1 naming the
others on stderr. Runs are re-listed every `--runs-every` seconds while streaming.

`age_s` is the age of the GPU reading (0 for a fresh sample; null before the first), `error` the one
line why a host is not up or has no readings. A live run's health and throughput come through
`remote/fleet_runs.py`'s hook (`probe_serving`: the health probe and the log's generation rate).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sgtui.commands.fleet_output import Printer
    from sgtui.remote.fleet import Fleet

CONTAINERS_EVERY = 5  # runs passes per container listing while streaming

HELP = "every host's GPUs and runs at once (--json: one object per host per sample; --once: one sample)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="one JSON object per host per sample")
    parser.add_argument(
        "--once", action="store_true", help="sample every host once; exit 1 naming those that did not answer"
    )
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between samples (default 1)")
    parser.add_argument(
        "--host",
        action="extend",
        nargs="+",
        metavar="NAME",
        help="only these hosts (from ~/.ssh/config or hosts.yaml); default: every configured host",
    )
    parser.add_argument(
        "--concurrency", type=int, default=None, help="SSH handshakes in flight at once (default 64)"
    )
    parser.add_argument(
        "--connect-timeout",
        type=float,
        default=20.0,
        help="seconds one host may take to connect (default 20)",
    )
    parser.add_argument(
        "--runs-every",
        type=float,
        default=60.0,
        help="while streaming, re-list each host's runs this often, in seconds (default 60)",
    )


def run(args: argparse.Namespace) -> int:
    import asyncio

    from sgtui.core.errors import UserError
    from sgtui.remote.hosts import load_hosts

    for flag, value in (
        ("--interval", args.interval),
        ("--connect-timeout", args.connect_timeout),
        ("--runs-every", args.runs_every),
    ):
        if not value > 0:
            raise UserError(f"{flag} {value:g}: give a positive number of seconds")
    if args.concurrency is not None and args.concurrency < 1:
        raise UserError(f"--concurrency {args.concurrency}: give 1 or more")
    hosts = load_hosts()
    names = list(dict.fromkeys(args.host)) if args.host else list(hosts)
    unknown = [n for n in names if n not in hosts]
    if unknown:
        known = ", ".join(sorted(hosts)) or "none configured"
        raise UserError(
            f"--host {unknown[0]}: no such host; add it to ~/.ssh/config or sgtui's hosts.yaml "
            f"(known: {known})"
        )
    if not names:
        raise UserError("no hosts configured: add them to ~/.ssh/config or sgtui's hosts.yaml")
    try:
        return asyncio.run(_main(args, hosts, names))
    except KeyboardInterrupt:
        return 130


async def _main(args: argparse.Namespace, hosts: dict, names: list[str]) -> int:  # type: ignore[type-arg]
    import asyncio
    import contextlib
    import os
    import signal

    from sgtui.commands.fleet_output import Printer
    from sgtui.remote.connection import ConnectionPool
    from sgtui.remote.fleet import CONCURRENCY, Fleet
    from sgtui.remote.fleet_runs import probe_serving

    printer = Printer(sys.stdout, json_lines=args.json)
    pool = ConnectionPool(hosts)
    fleet = Fleet(
        pool,
        names,
        concurrency=args.concurrency or CONCURRENCY,
        connect_timeout=args.connect_timeout,
        on_sample=printer.sample if args.json and not args.once else None,
        on_change=printer.change if args.json and not args.once else None,
        serving=probe_serving(),
    )
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    assert main is not None
    with contextlib.suppress(NotImplementedError):  # SIGTERM ends the stream as Ctrl-C does
        loop.add_signal_handler(signal.SIGTERM, main.cancel)
    printer.on_broken = main.cancel
    try:
        if args.once:
            return await _once(fleet, printer)
        await _stream(fleet, printer, args.interval, args.runs_every, args.json)
        return 0
    except asyncio.CancelledError:
        return 141 if printer.broken else 130
    finally:
        printer.flush()
        await fleet.close()
        await pool.close()
        if printer.broken:  # nothing more may reach the closed pipe, not even Python's flush at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


async def _once(fleet: Fleet, printer: Printer) -> int:
    import asyncio

    from sgtui.commands.fleet_output import answered, error_of

    async def one(name: str) -> None:
        view = await fleet.connect(name)
        if view.state.value == "up":
            await fleet.sample_once(name)
            await fleet.refresh(name)
        if printer.json_lines:
            printer.write(fleet.view(name))

    await asyncio.gather(*(one(n) for n in fleet.names))
    views = fleet.views()
    if not printer.json_lines:
        printer.table(views)
    missing = [v for v in views if not answered(v)]
    if missing:
        shown = "; ".join(f"{v.name} ({error_of(v) or v.state.value})" for v in missing[:20])
        more = f"; and {len(missing) - 20} more" if len(missing) > 20 else ""
        print(
            f"sgtui fleet: {len(missing)} of {len(views)} hosts did not answer: {shown}{more}",
            file=sys.stderr,
            flush=True,
        )
        return 1
    return 0


async def _stream(
    fleet: Fleet, printer: Printer, interval: float, runs_every: float, json_lines: bool
) -> None:
    import asyncio
    import contextlib

    async def runs_loop() -> None:
        sem = asyncio.Semaphore(8)  # a few listings at a time: they are commands on every host

        async def refresh(name: str, containers: bool) -> None:
            async with sem:
                with contextlib.suppress(Exception):  # the row keeps its last runs; the next pass retries
                    await fleet.refresh(name, containers=containers)

        passes = 0
        while True:
            await asyncio.sleep(min(2.0, runs_every))
            up = [v.name for v in fleet.views() if v.state.value == "up"]
            # containers come and go rarely: listed on every CONTAINERS_EVERY-th pass (and a host's first)
            await asyncio.gather(*(refresh(n, passes % CONTAINERS_EVERY == 0) for n in up))
            passes += 1
            await asyncio.sleep(max(runs_every - 2.0, 0.0))

    async def tables() -> None:
        while True:
            await asyncio.sleep(interval)
            printer.table(fleet.views())

    jobs = [fleet.watch(interval), runs_loop()]
    if not json_lines:
        jobs.append(tables())
    await asyncio.gather(*jobs)
