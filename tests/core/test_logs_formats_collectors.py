"""Logs as collectors hand them over: docker compose, `kubectl logs --prefix`, journald, Ray workers, and
SGLang's short `[MM-DD HH:MM:SS]` prefix. The SGLang record inside must read exactly as it would bare."""

from __future__ import annotations

from pathlib import Path

import pytest

from sgtui.core.logs import classify_text, diagnose
from sgtui.core.logs.prefix import collector_prefix, split_prefix

STARTUP = [
    "[2026-03-02 08:00:01] server_args=ServerArgs(model_path='/models/m', tp_size=2, "
    "mem_fraction_static=0.83)",
    "[2026-03-02 08:00:09 TP1] Load weight begin. avail mem=78.10 GB",
    "[2026-03-02 08:00:09 TP0] Load weight begin. avail mem=78.02 GB",
    "[2026-03-02 08:00:40 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, "
    "avail mem=62.90 GB, mem usage=15.12 GB.",
    "[2026-03-02 08:00:41 TP0] KV Cache is allocated. #tokens: 402113, K size: 24.55 GB, V size: 24.55 GB",
    "[2026-03-02 08:00:41 TP0] Memory pool end. avail mem=12.70 GB",
    "[2026-03-02 08:00:50 TP0] max_total_num_tokens=402113, chunked_prefill_size=8192, "
    "max_prefill_tokens=16384, max_running_requests=2048, context_len=8192, available_gpu_mem=11.02 GB",
    "[2026-03-02 08:00:51] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
    "[2026-03-02 08:00:55] The server is fired up and ready to roll!",
]
KINDS = [
    "server_args",
    "load_weight_begin",
    "load_weight_end",
    "kv_cache_allocated",
    "memory_pool_end",
    "max_total_num_tokens",
    "uvicorn_running",
    "ready",
]


def _wrapped(prefix: str) -> str:
    return "\n".join(prefix + line for line in STARTUP) + "\n"


@pytest.mark.parametrize(
    "prefix",
    [
        "sglang-1  | ",  # docker compose v2
        "sglang_server_1  | ",  # docker compose v1
        "qwen-sglang     | ",  # a container_name, padded to the longest service name
        "\x1b[36msglang-1  |\x1b[0m ",  # compose colours its prefixes on a terminal
        "[pod/sglang-0/server] ",  # kubectl logs --prefix
        "Mar 02 08:00:58 gpu-host sglang[40211]: ",  # journald, short format
        "(SGLangActor pid=7781, ip=10.0.0.4) ",  # a Ray worker (verl and other RL stacks)
        "sglang-1  | 2026-03-02T08:00:58.123456789Z ",  # compose logs -t: compose around docker's stamp
        "2026-03-02T08:00:58.809061-04:00 gpu-host sglang[40211]: ",  # journalctl -o short-iso-precise
        "> ",  # pasted from a Markdown quote
        "2026-03-02 16:00:58 ",  # Docker Desktop's log view (local time before the container's own line)
        "0: ",  # srun --label on a Slurm node
        "2024-02-08 09:56:23 | ERROR | stderr | ",  # FastChat's worker relaying SGLang's stderr
        "2025-01-05 10:00:00.123 | INFO     | worker:pump:42 - ",  # loguru
        "> sglang-1  | ",  # ... of a compose log
    ],
)
def test_a_startup_behind_a_collector_prefix_reads_like_the_bare_log(prefix: str) -> None:
    analysis = classify_text(_wrapped(prefix))
    assert analysis.outcome == "ready"
    assert [m.kind for m in analysis.milestones] == KINDS
    load = analysis.state.milestones["load_weight_begin"]
    assert (load.time, load.rank) == ("2026-03-02 08:00:09", "TP1")
    assert analysis.facts["load_weight_begin_avail_gib"] == 78.02  # rank 0's figure
    assert analysis.facts["max_total_num_tokens"] == 402113
    assert analysis.facts["mem_fraction_static"] == 0.83


def test_a_traceback_behind_compose_prefixes_keeps_its_frames_and_its_exception_line() -> None:
    log = "".join(
        f"sglang-1  | {line}\n"
        for line in [
            "[2026-03-02 08:00:41 TP0] Memory pool end. avail mem=2.10 GB",
            "[2026-03-02 08:00:42 TP0] Capture cuda graph begin. This can take up to several minutes.",
            "[2026-03-02 08:00:43 TP0] Scheduler hit an exception: Traceback (most recent call last):",
            '  File "/srv/sglang/srt/model_executor/cuda_graph_runner.py", line 310, in capture',
            "    out = self.capture_one_batch_size(bs, forward)",
            "KeyError: 'flashinfer_workspace'",
        ]
    )
    analysis = classify_text(log)
    assert analysis.error is not None
    assert (analysis.error.error_class, analysis.error.line) == ("cuda_graph_failed", 6)
    assert analysis.error.phase == "capturing_graphs"


def test_journald_reports_of_the_oom_killer_name_the_oom_killer() -> None:
    log = (
        "Mar 02 08:00:09 gpu-host python3[40211]: [2026-03-02 08:00:09 TP0] Load weight begin. "
        "avail mem=78.02 GB\n"
        "Mar 02 08:02:11 gpu-host systemd[1]: sglang.service: A process of this unit has been killed by the "
        "OOM killer.\n"
        "Mar 02 08:02:11 gpu-host systemd[1]: sglang.service: Main process exited, code=killed, "
        "status=9/KILL\n"
        "Mar 02 08:02:11 gpu-host systemd[1]: sglang.service: Failed with result 'oom-kill'.\n"
    )
    analysis = classify_text(log)
    assert analysis.outcome == "failed"
    assert analysis.error is not None
    assert (analysis.error.error_class, analysis.error.line) == ("oom_killed", 2)
    assert analysis.error.phase == "loading_weights"
    assert diagnose(analysis)[0].title == "Killed by the host's OOM killer"


def test_a_systemd_sigkill_without_a_python_error_is_the_oom_killer() -> None:
    log = (
        "Mar 02 08:00:09 gpu-host python3[40211]: [2026-03-02 08:00:09 TP0] Load weight begin. "
        "avail mem=78.02 GB\n"
        "Mar 02 08:02:11 gpu-host systemd[1]: sglang.service: Main process exited, code=killed, "
        "status=9/KILL\n"
    )
    error = classify_text(log).error
    assert error is not None and error.error_class == "oom_killed"


def test_the_month_day_prefix_gives_times_and_a_capitalised_exit_code_minus_9_is_the_oom_killer() -> None:
    log = (
        "[03-02 08:00:09] Load weight begin. avail mem=78.02 GB\n"
        "[03-02 08:02:11] Rank 0 scheduler is dead. Please check if there are relevant logs.\n"
        "[03-02 08:02:13] Exit code: -9\n"
    )
    analysis = classify_text(log)
    assert analysis.state.milestones["load_weight_begin"].time == "03-02 08:00:09"
    assert analysis.error is not None
    assert (analysis.error.error_class, analysis.error.line) == ("oom_killed", 3)
    assert analysis.state.durations()["loading_weights"] == 124.0


def test_an_exit_code_of_minus_3_with_sglangs_oom_hint_is_not_the_oom_killer() -> None:
    log = (
        "RuntimeError: Rank 0 scheduler died during initialization (exit code: -3). If exit code is -9 "
        "(SIGKILL), a common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check.\n"
    )
    error = classify_text(log).error
    assert error is not None and error.error_class == "child_failed"


@pytest.mark.parametrize(
    "line",
    [
        "Loading safetensors checkpoint shards:  25% Completed | 1/4 [00:01<00:03,  1.2s/it]",
        "Capturing batches (bs=8 avail_mem=3.10 GB):  50%|#####     | 2/4 [00:01<00:01,  1.9it/s]",
        "[Gloo] Rank 0 is connected to 1 peer ranks. Expected number of connected peer ranks is : 1",
        "[2026-03-02 08:00:09 TP0] Load weight begin. avail mem=78.02 GB",
        "INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
        "|   0  NVIDIA RTX A6000               On  |   00000000:01:00.0 Off |                  Off |",
        "ValueError: Model architectures ['FooForCausalLM'] are not supported for now.",
        "(error) something went wrong",
    ],
)
def test_ordinary_lines_are_not_mistaken_for_a_collector_prefix(line: str) -> None:
    assert collector_prefix(line) is None


def test_collector_prefixes_are_split_off_leaving_the_sglang_record() -> None:
    record = "[2026-03-02 08:00:09 TP0] x"
    assert collector_prefix("sglang-1  | " + record) == (None, record)
    assert collector_prefix("[pod/sglang-0/server] x") == (None, "x")
    assert collector_prefix("Mar  2 08:00:58 gpu-host sglang[40211]: x") == ("08:00:58", "x")
    assert collector_prefix("(WorkerDict pid=616, ip=10.1.2.3) x") == (None, "x")


def test_the_sglang_prefix_reads_a_month_day_date_without_a_year() -> None:
    assert split_prefix("[12-16 14:27:08 TP1] x") == ("12-16 14:27:08", ("TP1",), "x")


def test_python_logging_format_lines_read_as_sglang_records_with_their_time() -> None:
    log = (
        "2026-03-02 08:00:09,120 - sglang.srt.model_executor.model_runner - INFO - Load weight begin. "
        "avail mem=78.02 GB\n"
        "2026-03-02 08:00:50,002+08:00 - sglang.srt.managers.scheduler - INFO - max_total_num_tokens=402113, "
        "max_prefill_tokens=16384, max_running_requests=2048, context_len=8192\n"
        "2026-03-02 08:00:51,990 - gpustack.worker.backends.base - ERROR - RuntimeError: Not enough memory. "
        "Please try to increase --mem-fraction-static. "
        "Current value: self.server_args.mem_fraction_static=0.3\n"
    )
    analysis = classify_text(log)
    assert [m.kind for m in analysis.milestones] == ["load_weight_begin", "max_total_num_tokens"]
    assert analysis.state.milestones["load_weight_begin"].time == "2026-03-02 08:00:09,120"
    assert analysis.facts["max_total_num_tokens"] == 402113
    assert analysis.error is not None
    assert (analysis.error.error_class, analysis.error.line) == ("not_enough_memory", 3)
    assert analysis.facts["mem_fraction_static"] == 0.3


def test_a_byte_order_mark_does_not_hide_the_first_record() -> None:
    analysis = classify_text("\ufeff" + _wrapped(""))
    assert analysis.milestones[0].kind == "server_args"
    assert analysis.facts["tp_size"] == 2


def test_rank_tags_of_any_name_are_read_as_ranks() -> None:
    assert split_prefix("[2026-03-02 08:00:09 DP1 TP1 DCP1 ATTN_TP0] x") == (
        "2026-03-02 08:00:09",
        ("DP1", "TP1", "DCP1", "ATTN_TP0"),
        "x",
    )
    assert split_prefix("[W115 13:56:53.633401730 compiler_depend.ts:207] x")[1] == ()


FIXTURES = sorted((Path(__file__).resolve().parent.parent / "fixtures" / "logs").glob("*.log"))
WRAPPERS = {
    "compose": "sglang-1  | ",
    "kubectl": "[pod/sglang-0/server] ",
    "journald": "Mar 02 08:00:58 gpu-host python3[40211]: ",
    "ray": "(SGLangActor pid=7781) ",
    "docker-desktop": "2026-03-02 08:00:58 ",
    "srun": "1: ",
    "fastchat": "2024-02-08 09:56:23 | ERROR | stderr | ",
    "quote": "> ",
}


def _verdict(text: str) -> dict[str, object]:
    report = classify_text(text).to_json()
    return {
        "outcome": report["outcome"],
        "error_class": report["error_class"],
        "error_line": report["error_line"],
        "milestones": [(m["kind"], m["line"], m["rank"]) for m in report["milestones"]],
        "times": [m["time"] for m in report["milestones"]],
        "facts": report["facts"],
    }


@pytest.mark.parametrize("wrapper", list(WRAPPERS))
@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.stem)
def test_every_fixture_log_reads_the_same_behind_every_collector_prefix(fixture: Path, wrapper: str) -> None:
    text = fixture.read_text()
    prefix = WRAPPERS[wrapper]
    wrapped = "".join(prefix + line for line in text.splitlines(keepends=True))
    bare, seen = _verdict(text), _verdict(wrapped)
    bare_times, seen_times = bare.pop("times"), seen.pop("times")
    assert seen == bare
    # SGLang's own stamp wins; a collector's stands in only where SGLang printed none (the gpu_id= era).
    assert [t for t, b in zip(seen_times, bare_times, strict=True) if b is not None] == [
        b for b in bare_times if b is not None
    ]
