"""Several ranks: a phase is not over until the last rank in it has moved on. Phase durations, gaps inside a
log and the live stall watch are judged in the slowest rank's phase (the others wait on it at the next
collective) and name the ranks that lag; a milestone only rank 0 or the main process prints moves every
rank."""

from __future__ import annotations

from pathlib import Path

from sgtui.commands.explain import render
from sgtui.core.logs import LogClassifier, classify_text, diagnose

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "issues"


def _log(*lines: str) -> str:
    return "\n".join(lines) + "\n"


ARGS = "[2026-03-01 10:00:00] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', tp_size=2)"
BEGIN = [f"[2026-03-01 10:00:10 TP{r}] Load weight begin. avail mem=78.00 GB" for r in (0, 1)]
END = "Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=62.00 GB, mem usage=16.00 GB."
# TP1 loads in 50 s; TP0 takes 40 minutes. The pool lines wait for TP0: SGLang sizes the KV pool from the
# minimum free memory over the ranks (a collective), so no rank prints them before the last one has loaded.
SLOW_TP0 = _log(
    ARGS,
    *BEGIN,
    f"[2026-03-01 10:01:00 TP1] {END}",
    f"[2026-03-01 10:40:00 TP0] {END}",
    "[2026-03-01 10:40:01 TP0] KV Cache is allocated. #tokens: 400000, KV size: 40.00 GB",
    "[2026-03-01 10:40:01 TP1] KV Cache is allocated. #tokens: 400000, KV size: 40.00 GB",
    "[2026-03-01 10:40:01 TP0] Memory pool end. avail mem=20.00 GB",
    "[2026-03-01 10:40:01 TP1] Memory pool end. avail mem=20.00 GB",
    "[2026-03-01 10:40:02 TP0] Capture cuda graph begin. avail mem=20.00 GB",
    "[2026-03-01 10:40:02 TP1] Capture cuda graph begin. avail mem=20.00 GB",
)


def test_a_phase_lasts_until_its_last_rank_moves_on() -> None:
    """Loading ends when TP0 finishes, not when TP1 does; the pools took one second, not 39 minutes."""
    durations = classify_text(SLOW_TP0).state.durations()
    assert durations["loading_weights"] == 2390.0  # 10:00:10 -> 10:40:00
    assert durations["allocating_pools"] == 2.0  # 10:40:00 -> 10:40:02, when the last rank began capturing


def test_a_gap_is_judged_in_the_slowest_ranks_phase_and_names_the_lagging_rank() -> None:
    analysis = classify_text(SLOW_TP0)
    [gap] = analysis.state.gaps
    assert (gap["phase"], gap["from_line"], gap["to_line"]) == ("loading_weights", 4, 5)
    assert gap["lagging_ranks"] == ["TP0"] and gap["reached"] == "allocating_pools"
    text = render("slow.log", analysis, diagnose(analysis))
    assert (
        "Stall inside the log: no progress for 39 min while loading weights (TP0 still loading weights, the "
        "others allocating pools) (lines 4-5;" in text
    )
    assert "while allocating pools" not in text


def test_a_log_cut_while_a_rank_still_loads_ends_in_loading_and_times_loading_to_its_end() -> None:
    analysis = classify_text(_log(*SLOW_TP0.splitlines()[:4], "[2026-03-01 10:50:00 TP1] still waiting"))
    state = analysis.state
    assert state.reached == "allocating_pools" and state.slowest == "loading_weights"
    assert state.durations() == {"starting": 10.0, "loading_weights": 2990.0}  # to the log's end
    end = state.phase_at_end
    assert end is not None and (end["phase"], end["ran_s"]) == ("loading_weights", 2990.0)
    assert end["lagging_ranks"] == ["TP0"]
    assert analysis.stalled and state.stall is not None and state.stall.phase == "loading_weights"
    assert "TP0 still loading weights" in state.stall.text
    text = render("cut.log", analysis, diagnose(analysis))
    assert (
        "The log ends while loading weights (TP0 still loading weights, the others allocating pools): that "
        "phase had run 50 min at its last line" in text
    )


def test_the_live_watch_judges_the_same_phase_as_explain() -> None:
    """`sgtui launch --watch` and the TUI: the same log, a real clock, the same phase and lagging rank."""
    now = [0.0]  # the watch's clock, in seconds
    classifier = LogClassifier(clock=lambda: now[0])
    classifier.feed(_log(*SLOW_TP0.splitlines()[:4]))
    # 16 GB a GPU x TP 2 at 0.5 GB/s + 120 s: 184 s expected in loading (x4: 736 s); the pools' limit: 300 s
    now[0] = 700.0
    assert classifier.check_stall() is None
    now[0] = 800.0
    event = classifier.check_stall()
    assert event is not None and event.values["phase"] == "loading_weights"
    assert event.values["lagging_ranks"] == ["TP0"] and event.values["reached"] == "allocating_pools"
    assert "while loading weights (TP0 still loading weights, the others allocating pools)" in event.text
    classifier.feed(_log(f"[2026-03-01 10:40:00 TP0] {END}"))  # the last rank moves on: no stall, no lag
    assert classifier.state.stall is None and classifier.state.slowest == "allocating_pools"


def test_a_milestone_only_rank_0_prints_moves_every_rank() -> None:
    """SGLang's scheduler logs max_total_num_tokens on TP rank 0 only: with CUDA graphs off, TP1's last
    milestone is its memory pool, and it is not left behind there."""
    analysis = classify_text(
        _log(
            ARGS,
            *BEGIN,
            f"[2026-03-01 10:00:30 TP0] {END}",
            f"[2026-03-01 10:00:30 TP1] {END}",
            "[2026-03-01 10:00:31 TP0] Memory pool end. avail mem=20.00 GB",
            "[2026-03-01 10:00:31 TP1] Memory pool end. avail mem=20.00 GB",
            "[2026-03-01 10:00:32 TP0] max_total_num_tokens=400000, chunked_prefill_size=8192, "
            "max_prefill_tokens=16384, max_running_requests=2048, context_len=40960",
            "[2026-03-01 10:30:00] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
        )
    )
    state = analysis.state
    assert state.slowest == state.reached == "serving"
    assert [g["phase"] for g in state.gaps] == ["serving"] and "lagging_ranks" not in state.gaps[0]
    assert state.durations()["allocating_pools"] == 2.0


def test_one_rank_or_none_times_phases_by_the_first_milestone_as_before() -> None:
    """Without several ranks there is no one to wait for: the same lines untagged and tagged TP0 alone."""
    untagged = [line.replace(" TP1]", "]").replace(" TP0]", "]") for line in SLOW_TP0.splitlines()]
    one_rank = [line for line in SLOW_TP0.splitlines() if "TP1]" not in line]
    for lines in (untagged, one_rank):
        state = classify_text(_log(*lines)).state
        assert state.slowest == state.reached == "capturing_graphs"
        assert "lagging_ranks" not in state.gaps[0]
    assert classify_text(_log(*untagged)).state.durations()["loading_weights"] == 50.0  # the first end
    assert classify_text(_log(*one_rank)).state.durations()["loading_weights"] == 2390.0


def test_two_slow_ranks_on_a_real_rocm_log() -> None:
    """GLM-5-FP8 on 8 MI355X (0.5.8): six ranks load in about 230 s, TP0 and TP7 in 778 and 888 s; the pools
    wait for them (KV lines at 05:35:08 on every rank) and take a second. Was: loading 229 s, pools 660 s, and
    "no progress for 9 min while allocating pools"."""
    log = FIXTURES / "amd-glm5-mi355x-0.5.8-two-ranks-load-slowly.log"
    analysis = classify_text(log.read_text())
    durations = analysis.state.durations()
    assert durations["loading_weights"] == 887.0  # 05:20:21 (the last rank began) -> 05:35:08 (TP7's end)
    assert durations["allocating_pools"] == 1.0
    assert all(g["phase"] != "allocating_pools" for g in analysis.state.gaps)
    text = render(log.name, analysis, diagnose(analysis))
    assert "while allocating pools" not in text
    assert "allocating pools 1.0 s" in text
    assert analysis.error is not None and analysis.error.error_class == "cuda_graph_failed"
