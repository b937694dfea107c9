"""One machine reached under two host names (two aliases for one box, or the same address twice): the app
opens, and the machine's runs are shown once, under the first name, that row saying "also reachable as"
the other (the same host key, login user and boot id, read once when each name connects)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import yaml

from sgtui.core.profiles import Profile, load_profile
from sgtui.remote.hosts import load_hosts
from sgtui.remote.identity import parse_identity
from sgtui.remote.runs import RunManager
from sgtui.remote.targets import Target
from sgtui.sim.host import SimHost
from sgtui.ui.app import SgtuiApp
from sgtui.ui.panes.runs import RunsTable
from sgtui.ui.remote_backend import RemoteBackend
from sgtui.ui.session.fleet import FleetState
from sgtui.ui.views import HostView, RunView
from tests.ui.conftest import wait_for
from tests.ui.fakes import FakeBackend


async def test_two_names_for_one_machine_with_a_recorded_run_open_and_list_it_once(_config_dir: Path) -> None:
    async with SimHost(speed=20.0) as host:
        written = host.write_config(_config_dir)
        hosts = yaml.safe_load(written.hosts_file.read_text())
        hosts["sim-alias"] = dict(hosts["sim"])  # the same box under a second name
        written.hosts_file.write_text(yaml.safe_dump(hosts, sort_keys=False))
        path = next(p for p in written.profiles if "a6000" in p.stem)
        runs = str(host.state_dir / "runs")
        backend = RemoteBackend(load_hosts(ssh_config=False), runs_dir=runs, user_known_hosts=None)
        own = RemoteBackend(load_hosts(ssh_config=False), user_known_hosts=None)  # outlives the app's
        manager = RunManager(own.pool.get("sim"), Target("pct", "129"), runs)
        run = await manager.launch(["/bin/sleep", "120"])
        try:
            app = SgtuiApp(backend, load_profile(path), path, theme="textual-dark")
            async with app.run_test(size=(120, 40)) as pilot:
                await wait_for(
                    pilot,
                    lambda: all(h.state == "connected" for h in app.fleet.hosts.values()),
                    30,
                    "both names connected",
                )
                await wait_for(
                    pilot,
                    lambda: app.fleet.host("sim").also == ["sim-alias"],
                    20,
                    "the two names seen as one",
                )
                await wait_for(
                    pilot,
                    lambda: len(app.fleet.host("sim-alias").runs_by_target) > 0,
                    20,
                    "the alias's own listing",
                )
                table = app.main.query_one(RunsTable)
                await wait_for(pilot, lambda: table.row_count > 0, 10, "the runs table")
                listed = [(r.host, r.run_id) for r in table.runs if r.run_id == run.id]
                assert listed == [("sim", run.id)]

                def rows() -> list[str]:
                    return [str(node.label) for node in app.fleet_pane.tree.root.children]

                # the tree is rebuilt at most every REBUILD_GAP_S: the alias's row goes on the next rebuild
                await wait_for(pilot, lambda: len(rows()) == 1, 5, "one row for the machine")
                assert "also reachable as sim-alias" in rows()[0]
                await pilot.press("q")
        finally:
            await manager.stop(run, grace=1)
            await backend.close()
            await own.close()


class SharedHome(FakeBackend):
    """pve and gpu2 are two machines whose home dir is one NFS share: each lists the same recorded run."""

    async def connection_states(self, host: str) -> AsyncIterator[tuple[str, str]]:
        yield ("connecting", "")
        yield ("connected", "")
        await asyncio.Event().wait()

    async def runs(self, host: str, target: Any, runs_dir: str | None = None) -> list[RunView]:
        return [dataclasses.replace(r, host=host) for r in self.existing_runs]


async def test_two_machines_sharing_a_home_list_the_shared_record_under_each(profile: Profile) -> None:
    """Different machines (their identities differ) are two rows each; the table keys rows by host,
    target and run id, so the same id twice does not crash the app."""
    run = RunView("run-1", "pve", "bare host", "qwen", "exited", "/home/u/run-1/server.log")
    app = SgtuiApp(SharedHome(existing_runs=[run]), profile, theme="textual-dark")
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.main.query_one(RunsTable)
        await wait_for(pilot, lambda: table.row_count == 2, 10, "one row per machine")
        assert sorted(r.host for r in table.runs) == ["gpu2", "pve"]
        assert [n.data.host for n in app.fleet_pane.tree.root.children if n.data] == ["pve", "gpu2"]
        await pilot.press("q")


def test_the_first_configured_name_of_a_machine_is_its_row_and_the_others_are_also_reachable() -> None:
    fleet = FleetState()
    fleet.load([HostView("a", "10.0.0.1", ""), HostView("b", "box", ""), HostView("c", "10.0.0.2", "")])
    fleet.identify("b", "SHA256:k uid=0 boot=1")
    assert fleet.host("b").same_as is None  # alone so far
    fleet.identify("a", "SHA256:k uid=0 boot=1")
    fleet.identify("c", "SHA256:k uid=1000 boot=1")  # another login on that box: its own runs dir
    assert (fleet.host("a").also, fleet.host("b").same_as, fleet.host("c").same_as) == (["b"], "a", None)
    assert list(fleet.shown()) == ["a", "c"]
    fleet.identify("a", None)  # a reconnect that could not tell: never merged on a guess
    assert list(fleet.shown()) == ["a", "b", "c"]


def test_a_machine_is_its_host_key_login_and_boot_and_a_chatty_banner_tells_nothing() -> None:
    out = "0\n8f2c8c1e-2b1e-4d55-9b8e-0c4f7c2a1d10\n"
    assert parse_identity("SHA256:abc", out) == "SHA256:abc uid=0 boot=8f2c8c1e-2b1e-4d55-9b8e-0c4f7c2a1d10"
    assert parse_identity("SHA256:abc", "Welcome!\n") is None
    assert parse_identity("SHA256:abc", "0\nno such file\n") is None
