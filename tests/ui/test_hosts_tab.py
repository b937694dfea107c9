"""The hosts tab as a fleet view: a free-GPUs column, `/` by name or state, `o` sorts by free GPU memory,
and the hosts with room for the launch in view are marked ("where can I launch this profile?")."""

from __future__ import annotations

from textual.widgets import Input

from sgtui.core.profiles import Profile
from sgtui.ui.app import SgtuiApp
from sgtui.ui.panes.hosts import FleetPane, host_label
from sgtui.ui.session import FleetState
from sgtui.ui.session.fleet import FitNeed
from sgtui.ui.views import GpuView
from tests.ui.conftest import wait_for
from tests.ui.fakes import FakeBackend

H100 = 81559


def h100s(*used: int) -> list[GpuView]:
    return [GpuView(i, "NVIDIA H100 80GB HBM3", u, H100, 0) for i, u in enumerate(used)]


def test_free_gpus_and_the_fit_mark_follow_the_gpus_and_the_fit() -> None:
    """A GPU counts free as it counts not busy; the fit needs n GPUs this big with mfs of each free."""
    host = FleetState().host("h1")
    host.set_state("connected")
    host.set_gpus(h100s(3, 3, 70_000, 3))
    assert host.free_gpus() == 3 and host.free_mib() == 4 * H100 - 70_009
    need = FitNeed.from_fit({"verdict": "tight", "gpu_total_gib": 79.6, "mem_fraction_static": 0.85}, 3)
    assert need is not None and need.n_gpus == 3
    assert host.fits(need) and "✓ fits" in host_label(host, fits=host.fits(need)).plain
    assert "free 3" in host_label(host).plain and "✓" not in host_label(host).plain
    h100_fit = {"verdict": "ok", "gpu_total_gib": 79.6, "mem_fraction_static": 0.85}
    assert not host.fits(FitNeed.from_fit(h100_fit, 4))  # 3 free GPUs, not 4
    assert not host.fits(FitNeed.from_fit(dict(h100_fit, gpu_total_gib=96.0), 1))  # fitted on bigger GPUs
    assert FitNeed.from_fit({"verdict": "fails", "gpu_total_gib": 48, "mem_fraction_static": 0.85}, 1) is None
    host.set_state("lost")
    assert not host.fits(need)  # its numbers are not live


def labels(pane: FleetPane) -> list[str]:
    return [n.label.plain for n in pane.tree.root.children if n.data is not None]


async def test_slash_filters_by_state_o_sorts_by_free_memory_and_the_fit_is_marked(profile: Profile) -> None:
    app = SgtuiApp(FakeBackend(), profile, theme="textual-dark")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.host_states.get("gpu2") == "failed", what="gpu2's failure")
        await wait_for(pilot, lambda: app.fleet.host("pve").gpus, what="pve's GPUs")
        pane = app.query_one(FleetPane)
        await pilot.press("1")
        pane.query_one("#host-filter", Input).value = "failed"
        await pilot.pause(0.05)
        assert [label.split()[1] for label in labels(pane)] == ["gpu2"]
        pane.query_one("#host-filter", Input).value = ""
        await pilot.pause(0.05)

        gpu2 = app.fleet.host("gpu2")  # it comes back with idle H100s: more free memory than pve
        gpu2.set_state("connected")
        gpu2.set_gpus(h100s(3, 3, 3, 3))
        pane.refresh_fleet()
        assert [label.split()[1] for label in labels(pane)] == ["pve", "gpu2"]
        await pilot.press("o")
        assert pane.order == "free memory"
        assert [label.split()[1] for label in labels(pane)] == ["gpu2", "pve"]
        await pilot.press("o")
        assert [label.split()[1] for label in labels(pane)] == ["pve", "gpu2"]

        pane.fit_need = lambda: FitNeed(4, 60_000, 80_000)  # 4 big GPUs: only gpu2 has them
        pane.refresh_fleet()
        rows = dict(zip(("pve", "gpu2"), labels(pane), strict=True))
        assert "✓ fits" in rows["gpu2"] and "✓" not in rows["pve"]


async def test_slash_on_the_hosts_tab_types_into_the_host_filter_not_the_log_search(profile: Profile) -> None:
    """`/` is "search what is in front of you": on the hosts tab the host filter (the keys a user types go
    there and the tab stays), enter goes back to the list; on the log tab the log search as before."""
    app = SgtuiApp(FakeBackend(), profile, theme="textual-dark")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.host_states.get("gpu2") == "failed", what="gpu2's failure")
        pane = app.query_one(FleetPane)
        await pilot.press("1", "slash", *"failed")
        assert app.query_one("#tabs").active == "targets"  # type: ignore[attr-defined]
        assert pane.query_one("#host-filter", Input).value == "failed"
        await pilot.pause(0.05)
        assert [label.split()[1] for label in labels(pane)] == ["gpu2"]
        await pilot.press("enter")
        assert app.focused is pane.tree
        await pilot.press("3", "slash")
        assert app.query_one("#tabs").active == "log"  # type: ignore[attr-defined]
        assert app.focused is not None and app.focused.id == "log-search"
