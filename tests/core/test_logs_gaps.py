"""Stalls inside a log, on the log's own clock (`sgtui explain`): a gap between consecutive stamped lines past
the phase's limit is reported with what came after it, and a log that ends mid-phase says how long that phase
had run; the limits are the live watch's own and scale with what the log says."""

from __future__ import annotations

from sgtui.commands.explain import render
from sgtui.core.logs import LogClassifier, classify_text, diagnose


def _log(*lines: str) -> str:
    return "\n".join(lines) + "\n"


# A two-node launch's node 0 (the shape of https://github.com/sgl-project/sglang/issues/3783's DeepSeek-R1
# logs): it waits 30 minutes in the rendezvous for a node that never came, then the store times out.
NCCL_INIT_GAP = _log(
    "[2025-02-22 08:10:00] server_args=ServerArgs(model_path='deepseek-ai/DeepSeek-R1', tp_size=16, "
    "nnodes=2, "
    "node_rank=0, dist_init_addr='10.0.0.1:5000')",
    "[2025-02-22 08:10:20 TP0] Init torch distributed begin.",
    "[2025-02-22 08:40:21 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py", line 300, in '
    "init_torch_distributed",
    "    init_distributed_environment(",
    "torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for clients. 1/2 clients joined.",
)


def test_a_30_minute_gap_in_nccl_init_is_named_with_what_followed() -> None:
    analysis = classify_text(NCCL_INIT_GAP)
    gap = analysis.state.gaps[0]
    assert (gap["phase"], gap["from_line"], gap["to_line"]) == ("distributed_init", 2, 3)
    assert gap["idle_s"] == 1801.0 and gap["limit_s"] == 1440.0  # 60 s x (1 + 16/8) x 2 nodes x 4
    assert gap["then"].startswith("Scheduler hit an exception")
    assert analysis.error is not None and analysis.error.error_class == "nccl"
    text = render("n0.log", analysis, diagnose(analysis))
    assert "Stall inside the log: no progress for 30 min while distributed init (lines 2-3;" in text
    assert analysis.to_json()["gaps"][0]["idle_s"] == 1801.0


def test_a_gap_within_the_phases_limit_is_no_stall() -> None:
    """20 minutes loading a 70B model (about 140 GB at 0.5 GB/s: a 27-minute limit) is a slow disk, not a
    stall; the same 20 minutes for an 8B model is."""

    def loading(model: str) -> str:
        return _log(
            f"[2025-03-01 10:00:00] server_args=ServerArgs(model_path='{model}', tp_size=1)",
            "[2025-03-01 10:00:30 TP0] Load weight begin. avail mem=78.00 GB",
            "[2025-03-01 10:20:30 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, "
            "avail mem=10.00 GB, mem usage=60.00 GB.",
        )

    assert classify_text(loading("meta-llama/Llama-3.1-70B-Instruct")).state.gaps == []
    gaps = classify_text(loading("meta-llama/Llama-3.1-8B-Instruct")).state.gaps
    assert [g["phase"] for g in gaps] == ["loading_weights"]


CUT_IN_CAPTURE = _log(
    "[2025-05-16 10:40:00] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', tp_size=1)",
    "[2025-05-16 10:40:30 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=14.5 "
    "GB",
    "[2025-05-16 10:40:30 TP0] Capture cuda graph bs [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, "
    "96]",
    "Capturing batches (bs=96 avail_mem=14.45 GB):   7%|▋         | 1/15 [00:02<00:30,  2.00s/it]",
    "[2025-05-16 10:55:30 TP0] NCCL INFO comm 0x5601dc4ed8b0 rank 0 nranks 1 - Init COMPLETE",
)


def test_a_log_cut_mid_phase_says_how_long_the_phase_ran_and_names_the_stall() -> None:
    analysis = classify_text(CUT_IN_CAPTURE)
    end = analysis.state.phase_at_end
    assert end is not None and (end["phase"], end["ran_s"]) == ("capturing_graphs", 900.0)
    assert analysis.outcome == "starting" and analysis.stalled
    assert analysis.error is not None and analysis.error.error_class == "stalled"
    text = render("cut.log", analysis, diagnose(analysis))
    assert "The log ends while capturing CUDA graphs: that phase had run 15 min at its last line" in text


def test_a_log_cut_early_in_a_phase_is_still_starting_with_its_time() -> None:
    log = _log(*CUT_IN_CAPTURE.splitlines()[:3])
    analysis = classify_text(log)
    assert analysis.outcome == "starting" and not analysis.stalled
    assert analysis.state.phase_at_end == {
        "phase": "capturing_graphs",
        "limit_s": 150.0,
        "basis": "15 batch sizes",
        "ran_s": 0.0,
        "idle_s": 0.0,
    }


def test_the_watch_allows_graph_capture_minutes_not_an_hour() -> None:
    """The live watch's limit is the same figure: 15 sizes take seconds each, so 2.5 minutes without a bar
    step is a stall (the old limit let a stuck capture run for about an hour)."""
    clock = [0.0]
    live = LogClassifier(clock=lambda: clock[0])
    live.feed(_log(*CUT_IN_CAPTURE.splitlines()[:3]))
    clock[0] = 140.0
    assert live.check_stall() is None
    clock[0] = 151.0
    event = live.check_stall()
    assert event is not None and event.values["limit_s"] == 150.0


def test_a_tail_of_a_running_server_is_no_stalled_startup() -> None:
    """An hour of a server's own records after its batches began: nothing to time, no stall."""
    log = _log(
        "[2025-05-16 10:00:00 TP0] Prefill batch, #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: "
        "0.00, #running-req: 0, #queue-req: 0",
        "[2025-05-16 10:30:00 TP0] Cache flushed successfully!",
        "[2025-05-16 11:00:00 TP0] Cache flushed successfully!",
    )
    analysis = classify_text(log)
    assert not analysis.stalled and analysis.state.phase_at_end is None
