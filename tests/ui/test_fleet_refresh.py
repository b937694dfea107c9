"""The hosts tab under a burst of host changes (issue 21): 500 hosts connecting are ~2,500 messages, and a
rebuild of every row for each state change took the connect past a minute with keys answered seconds
late. The hosts' own changes (`refresh_soon`) now rebuild the tree at most every REBUILD_GAP_S and relabel
the rows on screen at most every REFRESH_GAP_S; the last change is always drawn, and what the user does
(`refresh_fleet`: the filter, the order, the 1 s tick) is drawn at once."""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import Input

from sgtui.core.profiles import Profile
from sgtui.ui.app import SgtuiApp
from sgtui.ui.panes.hosts import FleetPane
from sgtui.ui.views import HostView
from tests.ui.conftest import wait_for
from tests.ui.fakes import FakeBackend


def rows(pane: FleetPane) -> dict[str, str]:
    """Each host row's label."""
    return {n.data.host: n.label.plain for n in pane.tree.root.children if n.data is not None}


async def test_a_burst_of_state_changes_rebuilds_the_tree_a_few_times_and_ends_drawn(
    profile: Profile, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = SgtuiApp(FakeBackend(), profile, theme="textual-dark")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.host_states.get("gpu2") == "failed", what="the fake hosts")
        await pilot.press("1")
        pane = app.query_one(FleetPane)
        app.fleet.load([HostView(f"node{i:03d}") for i in range(200)])
        pane.refresh_fleet()
        await pilot.pause(0.6)
        rebuilds: list[int] = []
        rebuild = FleetPane._rebuild

        def counted(self: FleetPane, needle: str) -> Any:
            rebuilds.append(1)
            return rebuild(self, needle)

        monkeypatch.setattr(FleetPane, "_rebuild", counted)
        for i in range(200):  # every host connecting, then failing: 400 changes in one go
            app.fleet.host(f"node{i:03d}").set_state("connecting")
            pane.refresh_soon()  # what HostStateChanged does
            app.fleet.host(f"node{i:03d}").set_state("failed", "no route to host")
            pane.refresh_soon()
        assert len(rebuilds) <= 1  # was 400: one rebuild of every row per change (refresh_fleet each)
        last = lambda: "no route to host" in rows(pane).get("node199", "")  # noqa: E731
        await wait_for(pilot, last, what="the last change drawn")
        assert len(rebuilds) <= 2
        assert all(app.fleet.host(f"node{i:03d}").state == "failed" for i in range(200))


async def test_typing_a_filter_rebuilds_at_once_even_right_after_a_rebuild(profile: Profile) -> None:
    app = SgtuiApp(FakeBackend(), profile, theme="textual-dark")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.host_states.get("gpu2") == "failed", what="the fake hosts")
        await pilot.press("1")
        pane = app.query_one(FleetPane)
        pane.refresh_soon()  # a host's change: the next one within REFRESH_GAP_S would wait
        pane.query_one("#host-filter", Input).value = "gpu2"
        pane.refresh_fleet()  # what Input.Changed's handler calls (it comes later): drawn now
        assert list(rows(pane)) == ["gpu2"]
