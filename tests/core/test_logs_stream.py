"""The classifier fed as a log streams in: chunks, partial lines, `\\r` progress, ANSI, ranks, huge lines."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from sgtui.core.logs import LogClassifier, classify_text
from tests.cases import LOGS


def _feed_in_chunks(text: str, sizes: list[int]) -> LogClassifier:
    classifier = LogClassifier()
    pos = 0
    for size in sizes:
        classifier.feed(text[pos : pos + size])
        pos += size
    classifier.feed(text[pos:])
    classifier.finish()
    return classifier


def test_feeding_a_log_in_random_chunks_gives_the_same_result_as_the_whole_file() -> None:
    text = (LOGS / "v0523_ready_hybrid_mtp.log").read_text()
    whole = classify_text(text)
    rng = random.Random(7)
    streamed = _feed_in_chunks(text, [rng.randint(1, 40) for _ in range(200)])
    assert [m.kind for m in streamed.state.milestone_list()] == [m.kind for m in whole.milestones]
    assert streamed.state.facts == whole.facts
    assert streamed.state.phase == whole.state.phase == "ready"


def test_a_partial_line_waits_for_its_newline() -> None:
    classifier = LogClassifier()
    assert classifier.feed("[2026-01-02 10:00:00 TP0] Load weight beg") == []
    events = classifier.feed("in. avail mem=46.98 GB\n")
    assert [e.kind for e in events if e.kind != "phase"] == ["load_weight_begin"]
    assert events[0].line == 1
    assert classifier.state.facts["load_weight_begin_avail_gib"] == 46.98


def test_finish_classifies_a_last_line_without_newline() -> None:
    classifier = LogClassifier()
    classifier.feed("[2026-01-02 10:00:09] The server is fired up and ready to roll!")
    assert "ready" not in classifier.state.milestones
    classifier.finish()
    assert classifier.state.milestones["ready"].line == 1


def test_tqdm_progress_shows_before_the_bar_finishes_its_line() -> None:
    classifier = LogClassifier()
    classifier.feed("[2026-01-02 10:00:00 TP0] Load weight begin. avail mem=46.98 GB\n")
    events = classifier.feed(
        "\rLoading safetensors checkpoint shards:  18% Completed | 2/11 [00:08<00:36,  4.0s/it]"
        "\rLoading safetensors checkpoint shards:  45% Completed | 5/11 [00:20<00:24,  4.0s/it]\r"
    )
    progress = [e.values for e in events if e.kind == "progress"]
    assert progress[-1] == {"what": "weights", "percent": 45, "done": 5, "total": 11}
    assert classifier.state.current_progress == progress[-1]


def test_a_carriage_return_line_counts_as_one_line_and_keeps_its_last_state() -> None:
    text = (
        "[2026-01-02 10:00:00 TP0] Capture cuda graph begin. This can take up to several minutes. avail "
        "mem=3.0 GB\n"
        "Capturing batches (bs=8 avail_mem=2.9 GB):  50%|#####     | 2/4\r"
        "Capturing batches (bs=1 avail_mem=2.8 GB): 100%|##########| 4/4\n"
        "[2026-01-02 10:00:02 TP0] Capture cuda graph end. Time elapsed: 2.00 s. mem usage=0.20 GB. avail "
        "mem=2.80 GB.\n"
    )
    analysis = classify_text(text)
    assert analysis.line_count == 3
    assert analysis.state.progress["capturing_graphs"] == {
        "what": "graphs",
        "percent": 100,
        "done": 4,
        "total": 4,
        "bs": 1,
        "avail_gib": 2.8,
    }
    assert analysis.state.milestones["cuda_graph_end"].line == 3


def test_ansi_coloured_lines_are_classified_like_plain_ones() -> None:
    text = (
        "\x1b[32m[2026-01-02 10:00:00 TP0]\x1b[0m Load weight end. type=LlamaForCausalLM, "
        "dtype=torch.bfloat16, avail mem=\x1b[1m60.10\x1b[0m GB, mem usage=15.00 GB.\n"
    )
    analysis = classify_text(text)
    assert analysis.facts["avail_mem_after_weights_gib"] == 60.10
    assert analysis.milestones[0].rank == "TP0"


def test_a_milestone_counts_when_the_first_rank_reaches_it_and_records_every_rank() -> None:
    classifier = LogClassifier()
    events = classifier.feed(
        "[2026-01-02 10:00:05 TP1] Load weight begin. avail mem=46.98 GB\n"
        "[2026-01-02 10:00:05 TP3] Init torch distributed ends. mem usage=0.5 GB\n"
    )
    kinds = [e.kind for e in events if e.kind != "phase"]
    assert kinds == ["load_weight_begin", "init_torch_distributed"]
    milestone = classifier.state.milestones["load_weight_begin"]
    assert (milestone.rank, milestone.ranks) == ("TP1", {"TP1"})
    later = classifier.feed("[2026-01-02 10:00:06 TP0] Load weight begin. avail mem=46.90 GB\n")
    assert [e.kind for e in later] == []
    assert milestone.ranks == {"TP0", "TP1"}
    assert classifier.state.facts["load_weight_begin_avail_gib"] == 46.90  # rank 0's figure, see below
    assert classifier.state.phase == "loading_weights"


def test_rank_zeros_figure_wins_over_a_rank_that_printed_first() -> None:
    analysis = classify_text(
        "[2026-01-02 10:00:05 DP1 TP1] Load weight begin. avail mem=46.98 GB\n"
        "[2026-01-02 10:00:05 DP0 TP0] Load weight begin. avail mem=46.90 GB\n"
        "[2026-01-02 10:00:09 TP3] Capture cuda graph end. Time elapsed: 1.6 s. mem usage=0.04 GB. "
        "avail mem=1.47 GB.\n"
        "[2026-01-02 10:00:09 TP0] Capture cuda graph end. Time elapsed: 1.6 s. mem usage=0.05 GB. "
        "avail mem=1.46 GB.\n"
        "[2026-01-02 10:00:09 TP2] Capture cuda graph end. Time elapsed: 1.6 s. mem usage=0.03 GB. "
        "avail mem=1.48 GB.\n"
    )
    assert analysis.facts["load_weight_begin_avail_gib"] == 46.90
    assert analysis.facts["cuda_graph_mem_gib"] == 0.05
    assert analysis.milestones[0].rank == "DP1 TP1"


def test_a_tqdm_bar_and_a_record_glued_on_one_line_are_both_read() -> None:
    text = (
        "[2026-01-02 10:00:00 TP0] Capture cuda graph begin. This can take up to several minutes. avail "
        "mem=1.45 GB\n"
        "  0%|          | 0/13 [00:00<?, ?it/s][2026-01-02 10:00:00 TP1] Capture cuda graph begin. "
        "This can take up to several minutes. avail mem=1.45 GB\n"
    )
    analysis = classify_text(text)
    assert analysis.state.milestones["cuda_graph_begin"].ranks == {"TP0", "TP1"}
    assert analysis.state.progress["capturing_graphs"]["total"] == 13


def test_a_200_kb_line_is_cut_before_any_pattern_sees_it() -> None:
    huge = "[2026-01-02 10:00:00 TP0] " + "Traceback-free noise " * 10_000
    assert len(huge) > 200_000
    classifier = LogClassifier()
    events = classifier.feed(huge + "\n[2026-01-02 10:00:01] The server is fired up and ready to roll!\n")
    assert [e.kind for e in events if e.kind == "ready"] == ["ready"]
    assert classifier.state.milestones["ready"].line == 2
    assert all(len(e.text) <= 1000 for e in events)


def test_a_binary_blob_without_newlines_is_buffered_within_a_bound() -> None:
    classifier = LogClassifier()
    blob = "".join(chr(c) for c in range(256)).replace("\n", "") * 8192  # 2 MB, no newline
    classifier.feed(blob)
    assert len(classifier._buf) <= 1 << 20
    classifier.feed("\n[2026-01-02 10:00:01] The server is fired up and ready to roll!\n")
    assert classifier.state.milestones["ready"].line == 2


def test_a_server_that_answers_after_uvicorn_is_ready_even_without_the_ready_line() -> None:
    classifier = LogClassifier()
    classifier.feed(
        "[2026-01-02 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1)\n"
        '[2026-01-02 10:00:01] INFO:     127.0.0.1:5000 - "GET /health HTTP/1.1" 200 OK\n'
        "INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)\n"
    )
    assert classifier.state.phase == "serving"
    assert classifier.analysis().outcome == "starting"
    classifier.feed('[2026-01-02 10:00:03] INFO:     127.0.0.1:5002 - "POST /generate HTTP/1.1" 200 OK\n')
    assert classifier.state.phase == "ready"
    assert classifier.analysis().outcome == "ready"
    assert "ready" not in classifier.state.milestones  # the milestone stays the ready line itself


def test_process_exit_with_a_nonzero_code_and_no_error_in_the_log_is_a_failure() -> None:
    classifier = LogClassifier()
    classifier.feed("[2026-01-02 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1)\n")
    classifier.process_exited(1)
    analysis = classifier.analysis()
    assert analysis.outcome == "failed"
    assert analysis.error is not None and analysis.error.error_class == "child_failed"


def test_process_killed_by_sigkill_with_a_silent_log_is_the_oom_killer() -> None:
    classifier = LogClassifier()
    classifier.feed("[2026-01-02 10:00:00 TP0] Load weight begin. avail mem=46.98 GB\n")
    classifier.process_exited(-9)
    error = classifier.state.error
    assert error is not None and error.error_class == "oom_killed"
    assert error.phase == "loading_weights"


def test_sigkill_exit_after_a_sigquit_is_sglang_killing_itself_not_the_oom_killer() -> None:
    classifier = LogClassifier()
    classifier.feed(
        "[2026-01-02 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1)\n"
        "[2026-01-02 10:00:09] Received sigquit from a child process. It usually means the child failed.\n"
    )
    classifier.process_exited(-9)
    error = classifier.state.error
    assert error is not None and error.error_class == "child_failed"


def test_phase_durations_come_from_the_printed_times() -> None:
    analysis = classify_text((LOGS / "v03_time_only_tp2.log").read_text())
    durations = analysis.state.durations()
    assert durations["loading_weights"] == 9.0  # 10:11:07 -> 10:11:16, when the last rank (TP0) finished
    assert durations["distributed_init"] == 2.0
    assert "ready" not in durations


@settings(max_examples=40, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=40), crlf=st.booleans())
def test_any_chunking_of_any_line_ending_gives_the_whole_file_answer(cuts: list[int], crlf: bool) -> None:
    text = (LOGS / "v059_tp2_nextn_not_enough_memory.log").read_text()
    text = text.replace(
        "Loading safetensors checkpoint shards:  45% Completed | 5/11 [00:20<00:24,  4.01s/it]\n",
        "Loading safetensors checkpoint shards:  45% Completed | 5/11 [00:20<00:24,  4.01s/it]\r",
    )
    if crlf:
        text = text.replace("\n", "\r\n")
    whole = classify_text(text)
    classifier = LogClassifier()
    previous = 0
    for cut in sorted(c % (len(text) + 1) for c in cuts):
        classifier.feed(text[previous:cut])
        previous = cut
    classifier.feed(text[previous:])
    classifier.finish()
    assert classifier.line_count == whole.line_count
    assert [(m.kind, m.line, m.ranks) for m in classifier.state.milestone_list()] == [
        (m.kind, m.line, m.ranks) for m in whole.milestones
    ]
    assert classifier.state.facts == whole.facts
    assert classifier.state.error == whole.error


def test_a_healthy_startup_emits_each_phase_once_in_order() -> None:
    classifier = LogClassifier()
    events = classifier.feed((LOGS / "v0523_ready_hybrid_mtp.log").read_text())
    phases = [e.values["phase"] for e in events if e.kind == "phase"]
    assert phases == [
        "distributed_init",
        "loading_weights",
        "allocating_pools",
        "capturing_graphs",
        "serving",
        "ready",
    ]
    assert [e.values["what"] for e in events if e.kind == "progress"] == ["graphs"]


def test_a_failure_emits_one_failed_phase_and_error_events_naming_their_class() -> None:
    events = LogClassifier().feed((LOGS / "v059_tp2_nextn_not_enough_memory.log").read_text())
    assert [e.values["phase"] for e in events if e.kind == "phase"][-1] == "failed"
    assert sum(1 for e in events if e.kind == "phase" and e.values["phase"] == "failed") == 1
    errors = [(e.line, e.values["error_class"], e.values["strength"]) for e in events if e.kind == "error"]
    assert errors == [(17, None, "death"), (24, "not_enough_memory", "fatal"), (26, None, "death")]
