"""The load probe: SGLang's own `sglang.bench_serving` on the target where it runs, else a built-in
asyncio client over the SSH tunnel, streaming, measuring what bench_serving measures. Bounded in
requests and time; each report is saved beside the run (0600) and listed.

bench_serving is run in the run's environment (its interpreter, inside its target) as
`python -m sglang.bench_serving --backend sglang --dataset-name random-ids ...`: "random-ids" draws token
ids at random (datasets/random.py: `random_sample=False`), so no ShareGPT download; the tokenizer is the
server's own (`/model_info`'s tokenizer_path, a local folder for a local model), and HF_HUB_OFFLINE=1
keeps it from reaching the network for anything else.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import random
import shlex
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from sgtui.core.serving.bench import (
    BenchReport,
    RequestTiming,
    report_from_bench_serving,
    report_from_timings,
)
from sgtui.remote.http_stream import HttpError, stream_events

if TYPE_CHECKING:
    from sgtui.remote.connection import Transport
    from sgtui.remote.targets import Target

REPORT_GLOB = "bench-*.json"
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
Progress = Callable[[int, int], None]  # (finished, total)
PROMPT_WORDS = ("the", "of", "and", "to", "in", "is", "it", "that", "for", "on", "with", "as", "was", "at")


async def one_request(
    conn: Transport, port: int, host: str, input_len: int, output_len: int, timeout: float
) -> RequestTiming:
    """One streamed /generate of a prompt of about `input_len` tokens (words drawn at random: token ids
    would have to fit a vocabulary this side does not know; the server's `prompt_tokens` is the count
    kept) and exactly `output_len` new tokens."""
    body = {
        "text": " ".join(random.choice(PROMPT_WORDS) for _ in range(input_len)),
        "sampling_params": {"max_new_tokens": output_len, "temperature": 0, "ignore_eos": True},
        "stream": True,
    }
    start = time.monotonic()
    arrivals: list[tuple[float, int]] = []  # (when a read brought events, the tokens they carried so far)
    tokens, prompt_tokens = 0, input_len
    try:
        async for at, event in stream_events(conn, port, "/generate", body, host=host, timeout=timeout):
            meta = event.get("meta_info") if isinstance(event, dict) else None
            if isinstance(meta, dict) and isinstance(meta.get("completion_tokens"), int):
                tokens = meta["completion_tokens"]
                prompt_tokens = meta.get("prompt_tokens", prompt_tokens)
            else:
                tokens += 1
            if arrivals and arrivals[-1][0] == at:
                arrivals[-1] = (at, tokens)  # the same read: one chunk
            else:
                arrivals.append((at, tokens))
    except HttpError as exc:
        return RequestTiming(False, input_len, error=str(exc))
    if not arrivals:
        return RequestTiming(False, input_len, error="the stream ended without a token")
    return RequestTiming(
        True, prompt_tokens, tokens, arrivals[0][0] - start, chunk_itls(arrivals), arrivals[-1][0] - start
    )


def chunk_itls(arrivals: list[tuple[float, int]]) -> tuple[float, ...]:
    """Inter-token latencies as bench_serving counts them (benchmark/serving.py, the sglang backend):
    each chunk's gap since the previous one, spread over the tokens it brought. Events that arrived in
    one read are one chunk (the SSH channel and TCP coalesce them)."""
    itls: list[float] = []
    for (t0, n0), (t1, n1) in itertools.pairwise(arrivals):
        if n1 > n0:
            itls.extend([(t1 - t0) / (n1 - n0)] * (n1 - n0))
    return tuple(itls)


async def builtin_bench(
    conn: Transport,
    port: int,
    host: str,
    *,
    requests: int,
    concurrency: int,
    input_len: int,
    output_len: int,
    time_limit: float = 600.0,
    on_progress: Progress | None = None,
) -> BenchReport:
    """`requests` streamed requests, at most `concurrency` at once, stopped after `time_limit` seconds
    (what had not finished counts as failed)."""
    sem = asyncio.Semaphore(concurrency)
    timings: list[RequestTiming] = []

    async def worker() -> None:
        async with sem:
            t = await one_request(conn, port, host, input_len, output_len, timeout=min(120.0, time_limit))
            timings.append(t)
            if on_progress is not None:
                on_progress(len(timings), requests)

    start = time.monotonic()
    tasks = [asyncio.create_task(worker()) for _ in range(requests)]
    try:
        _done, pending = await asyncio.wait(tasks, timeout=time_limit)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    report = report_from_timings(timings, time.monotonic() - start, requests)
    report.concurrency = concurrency
    if pending:
        report.errors.insert(0, f"{len(pending)} request(s) did not finish within {time_limit:g} s")
    return report


async def bench_serving_available(conn: Transport, target: Target, python: str) -> bool:
    """Does the run's interpreter have `sglang.bench_serving`? (a sim or a trimmed install may not)"""
    code = (
        "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('sglang.bench_serving') else 3)"
    )
    result = await conn.run(target.command([python, "-c", code]), timeout=60)
    return result.rc == 0


async def sglang_bench(
    conn: Transport,
    target: Target,
    python: str,
    port: int,
    host: str,
    out_path: str,
    *,
    requests: int,
    concurrency: int,
    input_len: int,
    output_len: int,
    time_limit: float = 600.0,
    env: dict[str, str] | None = None,
) -> BenchReport:
    """SGLang's own benchmark on the target, its JSON line parsed (ValueError when it wrote none)."""
    argv = [
        "timeout", "-k", "10", str(int(time_limit)), python, "-m", "sglang.bench_serving",
        "--backend", "sglang", "--host", host, "--port", str(port),
        "--dataset-name", "random-ids", "--num-prompts", str(requests),
        "--random-input-len", str(input_len), "--random-output-len", str(output_len),
        "--random-range-ratio", "1.0", "--max-concurrency", str(concurrency),
        "--output-file", out_path, "--disable-tqdm", "--seed", "1",
    ]  # fmt: skip
    result = await conn.run(target.command(argv, (env or {}) | OFFLINE_ENV), timeout=time_limit + 60)
    read = await conn.run(target.script(f"cat -- {shlex.quote(out_path)} 2>/dev/null"), timeout=30)
    try:
        report = report_from_bench_serving(read.stdout, requests)
    except (ValueError, json.JSONDecodeError) as exc:
        tail = (result.stderr or result.stdout).strip().splitlines()[-3:]
        raise ValueError(
            f"sglang.bench_serving failed (exit {result.rc}): {' | '.join(tail) or exc}"
        ) from None
    report.concurrency = concurrency
    return report


async def save_report(conn: Transport, target: Target, run_dir: str, report: BenchReport) -> str:
    """Write the report as `RUN_DIR/bench-STAMP.json` (0600, under umask 077); its path."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    path = f"{run_dir}/bench-{stamp}.json"
    report.report_path = path
    data = base64.b64encode(json.dumps(report.saved_json(), indent=1).encode()).decode()
    script = (
        f'umask 077; p={shlex.quote(path)}; printf %s {shlex.quote(data)} | base64 -d > "$p.tmp" '
        '&& chmod 600 "$p.tmp" && mv -f -- "$p.tmp" "$p"'
    )
    result = await conn.run(target.script(script), timeout=30)
    if result.rc != 0:
        report.report_path = None
        raise OSError(f"could not save the report in {run_dir}: {result.stderr.strip()[-200:]}")
    return path


async def list_reports(conn: Transport, target: Target, run_dir: str) -> list[BenchReport]:
    """The reports saved beside the run, oldest first (unreadable ones skipped)."""
    script = (
        f"cd -- {shlex.quote(run_dir)} 2>/dev/null || exit 0; for f in {REPORT_GLOB}; do "
        '[ -f "$f" ] && [ ! -L "$f" ] && printf "%s\\n" "$(base64 -w0 < "$f")"; done'
    )
    result = await conn.run(target.script(script), timeout=30)
    out: list[BenchReport] = []
    for line in result.stdout.split():
        try:
            out.append(BenchReport.from_saved(json.loads(base64.b64decode(line))))
        except (ValueError, TypeError):
            continue
    return out


async def load_probe(
    conn: Transport,
    target: Target,
    run_dir: str,
    python: str,
    port: int,
    address: str,
    *,
    requests: int,
    concurrency: int,
    input_len: int,
    output_len: int,
    time_limit: float = 300.0,
    client: str = "auto",
    env: dict[str, str] | None = None,
    on_progress: Progress | None = None,
) -> BenchReport:
    """`sgtui bench` and the TUI's `b`: sglang.bench_serving where the run's environment has it (client
    "auto"; "sglang" insists, "builtin" never asks), else the built-in client; the report saved beside
    the run."""
    use_sglang = client != "builtin" and await bench_serving_available(conn, target, python)
    if client == "sglang" and not use_sglang:
        raise ValueError(
            f"--client sglang: {python} on {target.label} has no sglang.bench_serving; "
            "--client builtin (or auto) measures with sgtui's own client"
        )
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if use_sglang:
        out = f"{run_dir}/bench-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}.jsonl"
        prepare = f"umask 077; : >> {shlex.quote(out)} && chmod 600 -- {shlex.quote(out)}"
        await conn.run(target.script(prepare), timeout=30)  # bench_serving appends to it: private first
        report = await sglang_bench(
            conn, target, python, port, address, out, requests=requests, concurrency=concurrency,
            input_len=input_len, output_len=output_len, time_limit=time_limit, env=env,
        )  # fmt: skip
    else:
        report = await builtin_bench(
            conn, port, address, requests=requests, concurrency=concurrency, input_len=input_len,
            output_len=output_len, time_limit=time_limit, on_progress=on_progress,
        )  # fmt: skip
    report.started = started
    await save_report(conn, target, run_dir, report)
    return report
