"""The jump box's own copy of every run record sgtui launched (remote/run_store.py): private (0700 dir,
0600 files), read back exactly, bounded by pruning, and a damaged file is one line naming it, never a
traceback and never deleted."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from sgtui.core import paths
from sgtui.remote import run_store
from sgtui.remote.connection import Connection
from sgtui.remote.run_records import RunRecord
from sgtui.remote.run_store import RunStore, RunStoreError
from sgtui.remote.runs import RunManager
from sgtui.remote.targets import Target

BOOT = "0f6e3a52-7c1d-4b7e-9a43-5d2f1b8c9e10"


def _record(
    run_id: str = "20261201-120000-abc123", *, host: str = "gpu1", rank: int | None = None
) -> RunRecord:
    key = run_id if rank is None else f"{run_id}.node{rank}"
    return RunRecord(
        id=run_id,
        host=host,
        target=Target("pct", "129"),
        run_dir=f"/root/.local/state/sgtui/runs/{key}",
        argv=["/opt/venv/bin/python", "-m", "sglang.launch_server"],
        env={"HF_TOKEN": "secret-value"},
        gpus=[0, 1],
        pid=4242,
        pgid=4242,
        start=123456,
        boot=BOOT,
        started_at=1764590400.0,
        user="root",
        node_rank=rank,
        profile="qwen",
    )


def test_a_kept_record_reads_back_as_launched_without_env_values(tmp_path: Path) -> None:
    """Everything a stop needs comes back; env values (maybe secrets) were never written."""
    store = RunStore(tmp_path / "state" / "runs")
    record = _record()
    path = store.remember(record)
    assert "secret-value" not in path.read_text()
    (kept,) = store.find(record.id, "gpu1", Target("pct", "129"))
    assert kept.path == path and kept.ended_at is None
    assert kept.record == RunRecord(**{**record.__dict__, "env": {}})
    assert store.find(record.id, "gpu2", Target("pct", "129")) == []  # another host's run is not this one
    assert store.find(record.id, "gpu1", Target()) == []  # nor another target's


def test_the_store_is_private_to_its_user(tmp_path: Path) -> None:
    """The dir is 0700 and each file 0600, whatever the umask; a dir left wider is narrowed."""
    old = os.umask(0o022)
    try:
        root = tmp_path / "state" / "runs"
        path = RunStore(root).remember(_record())
        assert (root.stat().st_mode & 0o777, path.stat().st_mode & 0o777) == (0o700, 0o600)
        assert root.parent.stat().st_mode & 0o777 == 0o700
        root.chmod(0o755)
        RunStore(root).remember(_record("20261201-120001-abc124"))
        assert root.stat().st_mode & 0o777 == 0o700
        assert [p.name for p in root.iterdir() if p.name.startswith(".tmp-")] == []  # no temp file left
    finally:
        os.umask(old)


def test_the_default_store_is_in_sgtuis_state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(paths.ENV_VAR, str(tmp_path / "cfg"))
    assert RunStore().root == tmp_path / "cfg" / "state" / "runs"


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        json.dumps({"sgtui_run_record": 1, "saved_at": 1.0, "record": {"id": "x"}}),
        json.dumps({"something": "else"}),
        "\udcff".encode("utf-8", "surrogateescape").decode("latin-1"),
        " " * (run_store.MAX_FILE_BYTES + 1),
    ],
    ids=["syntax", "fields", "not-a-record", "not-utf8", "too-big"],
)
def test_a_damaged_record_is_one_line_naming_the_file_and_is_kept(tmp_path: Path, text: str) -> None:
    store = RunStore(tmp_path / "runs")
    path = store.remember(_record())
    path.write_text(text, encoding="latin-1")
    with pytest.raises(RunStoreError) as caught:
        store.find("20261201-120000-abc123", "gpu1", Target("pct", "129"))
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{path}: ")
    assert "move it aside or delete it" in message
    assert store.prune() == [] and path.read_text(encoding="latin-1") == text  # never deleted


def test_an_unreadable_record_is_one_line_too(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs")
    path = store.remember(_record())
    path.unlink()
    path.mkdir()  # something that is not a file where the record was
    with pytest.raises(RunStoreError, match=rf"^{re.escape(str(path))}: .*cannot be read \(Is a directory\)"):
        store.find("20261201-120000-abc123", "gpu1", Target("pct", "129"))


def test_ended_records_age_out_and_the_count_is_capped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record seen ended goes ENDED_KEEP_S later; past MAX_RECORDS the oldest go, ended ones first,
    so the store never grows without bound while live runs keep their records as long as they can."""
    monkeypatch.setattr(run_store, "MAX_RECORDS", 3)
    store = RunStore(tmp_path / "runs")
    old, live = _record("20261201-120000-aaaaaa"), _record("20261201-120001-bbbbbb")
    store.remember(old)
    store.remember(live)
    store.mark_ended([old], now=1000.0)
    assert store.prune(now=1000.0 + run_store.ENDED_KEEP_S - 1) == []
    assert store.prune(now=1000.0 + run_store.ENDED_KEEP_S + 1) == [store.path_for(old)]

    ended = _record("20261201-120002-cccccc")
    store.remember(ended)
    store.mark_ended([ended])
    for n in range(3):
        store.remember(_record(f"20261201-12001{n}-dddddd"))
    names = sorted(p.name.split("~")[0] for p in store.root.glob("*.json"))
    assert len(names) == 3 and ended.id not in names and live.id not in names  # ended first, then oldest


def test_a_prune_on_the_target_marks_the_local_copies_ended(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs")
    node = _record(rank=1)
    store.remember(node)
    store.mark_pruned("gpu1", Target("pct", "129"), [node.key])
    (kept,) = store.find(node.id, "gpu1", Target("pct", "129"))
    assert kept.ended_at is not None and kept.record.node_rank == 1


def test_live_records_of_a_place_skip_the_listed_and_the_ended(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs")
    listed, gone, ended = (_record(f"20261201-12000{n}-eeeeee") for n in range(3))
    for record in (listed, gone, ended, _record("20261201-120009-ffffff", host="gpu2")):
        store.remember(record)
    store.mark_ended([ended])
    found, problems = store.live_at("gpu1", Target("pct", "129"), skip=[listed.key])
    assert [k.record.id for k in found] == [gone.id] and problems == []


async def test_every_launch_keeps_its_record_on_the_jump_box(conn: Connection, tmp_path: Path) -> None:
    """`RunManager.launch` is where the CLI, multi-node and the TUI launches all create their record: the
    copy is written there, so each of them leaves one (here in SGTUI_CONFIG_DIR's state dir)."""
    script = tmp_path / "server"
    script.write_text("#!/bin/bash\nexec sleep 30\n")
    script.chmod(0o755)
    manager = RunManager(conn, Target(), str(tmp_path / "runs"))
    run = await manager.launch(
        [str(script)], {"TOKEN": "s3cret"}, node_rank=2, run_id="20261201-130000-0a0b0c"
    )
    try:
        (kept,) = RunStore().find(run.id, "sim", Target())
        assert kept.path.parent == paths.state_dir() / "runs" and kept.path.parent.parent.parent == Path(
            os.environ[paths.ENV_VAR]
        )
        assert (
            kept.record == RunRecord(**{**run.__dict__, "env": {}}) and "s3cret" not in kept.path.read_text()
        )
    finally:
        assert (await manager.stop(run, grace=0.5)).clean


async def test_a_kept_record_the_target_refuses_is_a_note_naming_it_and_the_listing_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`sgtui runs` asks the target about the runs only this machine's records know; one the target cannot
    answer for (here it raises, as a hand-edited run dir does) is a note naming the file, while the runs
    the target listed are still listed."""
    from sgtui.commands.runs import listed
    from sgtui.remote.runs import RunState, RunStatus

    monkeypatch.setattr(paths, "state_dir", lambda: tmp_path / "state")
    listed_run, kept_only = _record("20261201-120000-aaaaaa"), _record("20261201-130000-bbbbbb")
    path = RunStore().remember(kept_only)

    class Manager:
        host, target = "gpu1", Target("pct", "129")

        async def list_runs(self) -> list[RunRecord]:
            return [listed_run]

        async def status(self, record: RunRecord) -> RunStatus:
            if record.id == kept_only.id:
                raise ValueError("run dir refused")
            return RunStatus(RunState.RUNNING)

    notes: list[str] = []
    rows = await listed(Manager(), notes)  # type: ignore[arg-type]
    assert [record.id for record, _ in rows] == [listed_run.id]
    assert notes == [f"sgtui runs: {path}: the record of run {kept_only.id}: run dir refused"]
