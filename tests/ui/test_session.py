"""The UI's state objects on their own: bounded logs, one announcement per change, the fleet's rows."""

from __future__ import annotations

from typing import Any

from textual.message import Message

from sgtui.ui import messages as m
from sgtui.ui.panes.hosts import host_label
from sgtui.ui.session import FleetState, FollowedRuns, LogBuffer, RunSession, age_text
from sgtui.ui.views import GpuView, HostView, RunView
from tests.ui.fakes import gpus
from tests.ui.scripts import failing_log, ready_log


def run(run_id: str = "run-1", rank: int | None = None, host: str = "pve") -> RunView:
    return RunView(run_id, host, "lxc 129", "p", "running", f"/r/{run_id}.log", node_rank=rank)


def session(r: RunView | None = None, max_lines: int = 100) -> tuple[RunSession, list[Message]]:
    posted: list[Message] = []
    return RunSession(r or run(), None, posted.append, max_lines=max_lines, clock=lambda: 5.0), posted


def test_the_log_buffer_keeps_the_newest_lines_and_counts_the_rest() -> None:
    buf = LogBuffer(max_lines=3)
    buf.add(0, ["a", "b"])
    buf.add(0, ["c", "d", "e"])
    assert buf.lines() == ["c", "d", "e"]
    assert (buf.total, buf.dropped) == (5, 2)


def test_interleaved_nodes_get_a_node_column_and_one_node_shows_alone() -> None:
    buf = LogBuffer()
    buf.add(0, ["x"])
    buf.add(1, ["y"])
    assert buf.lines() == ["n0 │ x", "n1 │ y"]
    assert buf.lines(1) == ["y"]


def test_a_flood_between_two_flushes_keeps_a_screenful_and_says_how_many_were_skipped() -> None:
    s, posted = session(max_lines=10)
    s.in_view = True
    s.feed(0, [f"l{i}" for i in range(25)], 100)
    s.flush()
    batch = next(p for p in posted if isinstance(p, m.LogLines))
    assert [line for _, line in batch.lines] == [f"l{i}" for i in range(15, 25)]
    assert batch.skipped == 15 and s.log.total == 25


def test_a_run_out_of_view_keeps_its_lines_without_posting_them() -> None:
    s, posted = session()
    s.feed(0, ["a", "b"], 4)
    s.flush()
    assert s.log.lines() == ["a", "b"] and not [p for p in posted if isinstance(p, m.LogLines)]


def test_a_session_posts_its_outcome_once_with_the_diagnosis_kept_on_it() -> None:
    s, posted = session()
    s.feed(0, failing_log(), 1)
    outcomes = [p.outcome for p in posted if isinstance(p, m.RunOutcome)]
    assert outcomes == ["failed"] and s.state == "failed"
    assert "Not enough GPU memory" in s.diagnoses[0].title
    s.ended(0, "failed")
    assert [p.outcome for p in posted if isinstance(p, m.RunOutcome)] == ["failed"]


def test_a_multi_node_run_is_ready_only_when_every_node_is() -> None:
    s, _ = session(run("r", 0))
    s.add_node(run("r", 1, host="sim-2"))
    s.feed(0, ready_log(), 1)
    assert s.state != "ready"
    s.feed(1, [line for line in ready_log() if "fired up" not in line and "Uvicorn" not in line], 1)
    assert s.state == "ready"  # a worker node never serves HTTP: its CUDA graphs are its last milestone
    assert s.node_timelines()[1][2].phase == "ready"
    assert s.hosts == ["pve", "sim-2"] and set(s.histories) == {"pve", "sim-2"}


def test_a_change_out_of_view_is_announced_once_and_marked_until_viewed() -> None:
    followed = FollowedRuns()
    a, _ = session(run("a"))
    b, _ = session(run("b"))
    followed.add(a)
    followed.add(b)
    followed.view("b")
    assert followed.changed_out_of_view(a, "ready")
    assert not followed.changed_out_of_view(a, "ready")
    assert not followed.changed_out_of_view(b, "failed")  # in view: the view shows it
    assert a.unseen == "ready"
    assert followed.step(1) is a and a.unseen is None


def test_the_followed_set_is_bounded_and_lets_go_of_ended_runs_first() -> None:
    followed = FollowedRuns(limit=2)
    a, _ = session(run("a"))
    b, _ = session(run("b"))
    c, _ = session(run("c"))
    b.state = "exited"
    followed.add(a)
    followed.add(b)
    assert followed.add(c) == [b]
    assert [s.key for s in followed] == ["a", "c"]


def test_a_fleet_row_says_gpus_used_of_total_on_a_fixed_scale_and_the_worst_run() -> None:
    now = [100.0]
    fleet = FleetState(clock=lambda: now[0])
    fleet.load([HostView("pve"), HostView("gpu2")])
    pve = fleet.host("pve")
    pve.set_state("connected")
    pve.set_gpus(gpus((30_000, 512)))
    pve.set_runs("lxc 129", [dataclass_run("a", "running"), dataclass_run("b", "failed")])
    now[0] = 112.0
    state: dict[str, str] = {"a": "stalled"}
    row = host_label(pve, fleet.run_health("pve", lambda r: state.get(r.run_id, r.state))).plain
    assert row.startswith("● pve") and "connected 12s" in row
    assert "GPU 1/2" in row and "29.8/96 GiB" in row
    assert row.endswith("1 run failed")  # the newest run on its target failed: worse than a stall
    pve.set_runs("lxc 129", [dataclass_run("0-old", "failed"), dataclass_run("a", "running")])
    row = host_label(pve, fleet.run_health("pve", lambda r: state.get(r.run_id, r.state))).plain
    assert row.endswith("1 run stalled")  # an older failure is history
    pve.set_runs("lxc 129", [dataclass_run("b", "failed")])
    assert host_label(pve, fleet.run_health("pve", lambda r: r.state)).plain.endswith(
        "no live run, last failed"
    )
    gpu2 = fleet.host("gpu2")
    gpu2.set_state("failed", "gpu2: no route to host\nsecond line")
    assert host_label(gpu2).plain.endswith("gpu2: no route to host")


def test_a_host_without_gpus_says_so_instead_of_numbers() -> None:
    fleet = FleetState()
    host = fleet.host("box")
    host.set_state("connected")
    host.set_gpus([GpuView(-1, "", 0, 0, None, (), "no nvidia-smi: bash: nvidia-smi: command not found")])
    assert "no nvidia-smi" in host_label(host).plain and "GiB" not in host_label(host).plain


def test_outside_text_in_a_row_is_never_markup() -> None:
    fleet = FleetState()
    host = fleet.host("[bold]evil[/bold]")
    host.set_state("failed", "[red]x[/red]")
    assert "[bold]evil[/bold]" in host_label(host).plain and "[red]x[/red]" in host_label(host).plain


def test_ages_read_like_a_clock() -> None:
    assert [age_text(s) for s in (None, 3, 125, 7300)] == ["", "3s", "2m05s", "2h01m"]


def dataclass_run(run_id: str, state: str) -> Any:
    return RunView(run_id, "pve", "lxc 129", "p", state)


def test_a_stall_is_announced_and_progress_afterwards_clears_it() -> None:
    s, posted = session()
    s.feed(0, ready_log()[:3], 1)
    s.stalled(0, "no progress in loading weights for 600 s")
    assert s.state == "stalled"
    assert [(p.outcome, p.detail) for p in posted if isinstance(p, m.RunOutcome)][-1] == (
        "stalled",
        "no progress in loading weights for 600 s",
    )
    s.feed(0, ready_log()[3:5], 2)  # the classifier saw progress: its stall is cleared
    assert s.state == "starting"
