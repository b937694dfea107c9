"""Stalls, with a fake clock: a phase with no progress far past its expected time (scaled by what the log
says) gives one `stalled` event naming the phase, how long, and the ranks/nodes that got past; progress clears
it; `stall_after` overrides the limit; a stall is not a failure."""

from __future__ import annotations

import io
import json

from sgtui.core.logs import LogClassifier, diagnose
from tests.logpaths import FakeRun, _Record, run_watch


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _log(*lines: str) -> str:
    return "\n".join(lines) + "\n"


ARGS = (
    "[2026-03-01 10:00:00] server_args=ServerArgs(model_path='/m/Llama-3.1-70B-Instruct', "
    "tp_size=8, nnodes=2)"
)
DIST_INIT = [f"[2026-03-01 10:00:05 TP{r}] Init torch distributed begin." for r in range(8)]


def test_a_distributed_init_that_never_ends_is_a_stall_naming_the_ranks() -> None:
    clock = Clock()
    classifier = LogClassifier(clock=clock)
    classifier.feed(_log(ARGS, *DIST_INIT))
    clock.now = 200.0
    assert classifier.check_stall() is None  # 60 s x (1 + 8/8) x 2 nodes = 240 s expected; 960 s is the limit
    clock.now = 1000.0
    event = classifier.check_stall()
    assert event is not None and event.kind == "stalled"
    assert event.values["phase"] == "distributed_init"
    assert event.values["idle_s"] == 1000.0
    assert event.values["expected_s"] == 240.0
    assert event.values["last_milestone"] == "init_torch_distributed"
    assert event.values["ranks_reached"] == [f"TP{r}" for r in range(8)]
    assert event.values["ranks_behind"] == []
    assert classifier.check_stall() is None  # reported once
    analysis = classifier.analysis()
    assert analysis.outcome == "starting" and analysis.stalled  # DESIGN.md's outcomes; the class says it
    assert analysis.state.error is None  # not a failure
    report = analysis.to_json()
    assert (report["error_class"], report["error"]["phase"]) == ("stalled", "distributed_init")
    first = diagnose(analysis)[0]
    assert first.title == "Stalled while setting up the GPUs' communication (distributed init)"
    assert {"NCCL_SOCKET_IFNAME", "NCCL_P2P_DISABLE"} <= {s.flag for s in first.suggestions}
    assert any("--dist-init-addr port" in s.why for s in first.suggestions)
    assert any("same SGLang" in s.why for s in first.suggestions)


def test_ranks_and_nodes_that_did_not_get_past_are_named() -> None:
    clock = Clock()
    classifier = LogClassifier(clock=clock)
    classifier.feed(_log(ARGS, *DIST_INIT))
    clock.now = 10.0
    classifier.feed(
        _log(*[f"[2026-03-01 10:00:15 TP{r}] Load weight begin. avail mem=78.00 GB" for r in range(4)])
    )
    clock.now = 10.0 + 10_000
    event = classifier.check_stall()
    assert event is not None
    # the stall is in the slowest ranks' phase: node 0 waits on node 1's distributed init
    assert event.values["phase"] == "distributed_init"
    assert event.values["lagging_ranks"] == ["TP4", "TP5", "TP6", "TP7"]
    assert "TP4, TP5, TP6, TP7 still distributed init, the others loading weights" in event.text
    assert event.values["ranks_reached"] == ["TP0", "TP1", "TP2", "TP3"]
    assert event.values["ranks_behind"] == ["TP4", "TP5", "TP6", "TP7"]
    assert (event.values["nodes_reached"], event.values["nodes_behind"]) == ([0], [1])
    assert "TP4" in diagnose(classifier.analysis())[0].detail


def test_progress_clears_a_stall() -> None:
    clock = Clock()
    classifier = LogClassifier(clock=clock)
    classifier.feed(_log(ARGS, *DIST_INIT))
    clock.now = 5000.0
    assert classifier.check_stall() is not None
    classifier.feed(_log("[2026-03-01 11:23:00 TP0] Load weight begin. avail mem=78.00 GB"))
    assert classifier.analysis().outcome == "starting"
    assert classifier.analysis().error is None


def test_weight_loading_expects_the_models_size_at_a_modest_disk_rate() -> None:
    clock = Clock()
    classifier = LogClassifier(clock=clock)
    classifier.feed(_log(ARGS, "[2026-03-01 10:00:15 TP0] Load weight begin. avail mem=78.00 GB"))
    # 70B in the name: about 140 GB, at 0.5 GB/s plus 120 s = 400 s expected; four times that is the limit
    clock.now = 1500.0
    assert classifier.check_stall() is None
    clock.now = 1700.0
    event = classifier.check_stall()
    assert event is not None and event.values["expected_s"] == 400.0
    assert "140 GB" in event.values["basis"]
    first = diagnose(classifier.analysis())[0]
    assert "local NVMe" in first.suggestions[0].why
    assert "--cpu-offload-gb" in [s.flag for s in first.suggestions]


def test_the_loading_rate_seen_so_far_sets_the_wait_for_the_next_shard() -> None:
    clock = Clock()
    classifier = LogClassifier(clock=clock)
    classifier.feed(_log(ARGS, "[2026-03-01 10:00:00 TP0] Load weight begin. avail mem=78.00 GB"))
    bar = "Loading safetensors checkpoint shards:  {p}% Completed | {d}/30 [00:{s}<01:40,  10.0s/it]"
    classifier.feed(_log(f"[2026-03-01 10:00:50 TP0] {bar.format(p=16, d=5, s=50)}"))
    # 50 s for 5 shards: 10 s each; no shard for max(120, 4 x 30) = 120 s is a stall
    clock.now = 100.0
    assert classifier.check_stall() is None
    clock.now = 200.0
    event = classifier.check_stall()
    assert event is not None and "10 s per checkpoint shard" in event.values["basis"]


def test_a_full_bar_says_nothing_about_the_rest_of_loading() -> None:
    """After the last checkpoint shard SGLang still post-processes the weights (quantized layers repacked,
    minutes for a large FP8 model) with no bar: a bar that took 1 s a shard does not make 5 quiet minutes a
    stall; the wait falls back to the model's size (140 GB: 400 s expected, 1600 s limit)."""
    clock = Clock()
    classifier = LogClassifier(clock=clock)
    classifier.feed(_log(ARGS, "[2026-03-01 10:00:00 TP0] Load weight begin. avail mem=78.00 GB"))
    bar = "Loading safetensors checkpoint shards: 100% Completed | 30/30 [00:30<00:00,  1.00s/it]"
    clock.now = 30.0
    classifier.feed(_log(f"[2026-03-01 10:00:30 TP0] {bar}"))
    clock.now = 330.0
    assert classifier.check_stall() is None
    classifier.feed(_log("[2026-03-01 10:06:00 TP0] Load weight end. type=LlamaForCausalLM, avail mem=60 GB"))
    assert classifier.state.gaps == []  # explain, on the log's own clock, agrees


def test_stall_after_overrides_every_phase_limit() -> None:
    clock = Clock()
    classifier = LogClassifier(clock=clock, stall_after=30.0)
    classifier.feed(
        _log(ARGS, "[2026-03-01 10:01:00 TP0] Capture cuda graph begin. This can take up to several minutes.")
    )
    clock.now = 29.0
    assert classifier.check_stall() is None
    clock.now = 31.0
    event = classifier.check_stall()
    assert event is not None and event.values["phase"] == "capturing_graphs"
    assert event.values["limit_s"] == 30.0
    flags = [s.flag for s in diagnose(classifier.analysis())[0].suggestions]
    assert flags == ["--cuda-graph-max-bs", "--disable-cuda-graph"]


def test_no_stall_once_ready_failed_or_without_a_clock() -> None:
    clock = Clock()
    ready = LogClassifier(clock=clock)
    ready.feed(_log(ARGS, "[2026-03-01 10:05:00] The server is fired up and ready to roll!"))
    failed = LogClassifier(clock=clock)
    failed.feed(
        _log(ARGS, "[2026-03-01 10:00:01] Not enough memory. Please try to increase --mem-fraction-static.")
    )
    clock.now = 1e9
    assert ready.check_stall() is None and failed.check_stall() is None
    assert LogClassifier().check_stall(now=1e9) is None  # explain reads files: no live clock, no stall


def test_launch_watch_ends_with_exit_1_on_a_stall() -> None:
    from sgtui.commands import launch

    out = io.StringIO()
    run, record = FakeRun([ARGS, *DIST_INIT], rc=None), _Record("/tmp/run/log")
    printer = launch.Printer(json_events=True, out=out)

    ticks = [0.0]

    def clock() -> float:
        """No time passes until the log's lines are in, then a second a reading: the limit passes right
        after the last line (a wall clock made this depend on how long the watch's own imports took
        before the first chunk arrived)."""
        if run.delivered == len(run.lines):
            ticks[0] += 1.0
        return ticks[0]

    code, _ = run_watch(run, record, printer, timeout=None, stall_after=0.05, clock=clock)
    assert code == 1
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    kinds = [e["event"] for e in events]
    assert "stalled" in kinds and kinds[-1] == "failed"
    stalled = next(e for e in events if e["event"] == "stalled")
    assert stalled["phase"] == "distributed_init"
    assert events[-1]["error_class"] == "stalled"
    assert any(e["event"] == "diagnosis" and e["title"].startswith("Stalled while") for e in events)
