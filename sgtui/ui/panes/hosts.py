"""The Hosts tab, the fleet view: one row per configured host (connection state and its age, GPUs
used/total on a fixed scale, its runs and their worst health) with its containers folded under it.
A connected host gone silent has its GPU values dimmed with their age and its runs' health aged ("1 run
ready, last seen 35s ago"); a lost host's values are greyed and struck, its containers greyed.

`Enter` on a host unfolds it (and connects it if it is not); on a container it makes that the target.
Every label is built from `Text` pieces: host names, details and container names are outside text.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Input, Tree
from textual.widgets.tree import TreeNode

from sgtui.ui.session.ages import age_text
from sgtui.ui.session.fleet import FitNeed, FleetState, HostModel
from sgtui.ui.status_line import host_silence, stale_text
from sgtui.ui.views import ContainerView, RunView
from sgtui.ui.widgets.gpu_sparkline import bar_for, level_style

# The hosts' own changes (`refresh_soon`) redraw the tab at most every REFRESH_GAP_S (the rows on screen
# relabelled) and rebuild the tree (a state, containers found) at most every REBUILD_GAP_S; the 1 s tick,
# the filter and the order draw at once (`refresh_fleet`).
# 500 hosts connecting are ~2,500 messages (states, machines, containers, runs): a rebuild of 500 rows for
# each state change took the connect from seconds to over a minute, keys answered seconds late, and a
# relabel of the rows on screen for each message still held keys ~0.25 s (bench/bench_ui_hosts.py).
REFRESH_GAP_S = 0.1
REBUILD_GAP_S = 0.5

STATE_MARK = {
    "connected": ("●", "green"),
    "connecting": ("◌", "yellow"),
    "lost": ("●", "red"),
    "failed": ("✗", "red"),
    "unknown-key": ("?", "yellow"),
    "idle": ("○", "dim"),
}
HEALTH_STYLE = {
    "failed": "bold red",
    "stalled": "bold yellow",
    "starting": "cyan",
    "running": "green",
    "ready": "bold green",
}
MAX_BARS = 16
NAME_WIDTH = 14
STATE_WIDTH = 15  # "connecting 12m05s" is rare; most fit, so the GPU column lines up


@dataclass(frozen=True)
class Pick:
    host: str
    container: ContainerView | None


StateOf = Callable[[RunView], str]
Silence = Callable[[str], float | None]  # host name -> how long its live runs' health went unconfirmed


def gpu_text_of(host: HostModel) -> Text:
    """The GPU summary whatever the connection state (a lost host shows its last one, greyed)."""
    state, host.state = host.state, "connected"
    try:
        return gpu_text(host)
    finally:
        host.state = state


def gpu_text(host: HostModel) -> Text:
    """GPUs in use / total, a fixed-scale bar per GPU, and memory used / total."""
    summary = host.gpu_summary()
    if summary is None:
        return Text("GPUs ?", style="dim") if host.state == "connected" else Text("")
    if summary.problem:
        return Text(summary.problem[:40], style="yellow")
    text = Text()
    text.append(f"GPU {summary.busy}/{summary.count} ")
    free = host.free_gpus() or 0
    text.append(f"free {free} ", style="bold" if free else "dim")
    bars, style = "", None  # neighbours of one style are one span: fewer segments to draw per row
    for g in host.gpus[:MAX_BARS]:
        if g.total_mib and not g.note:
            level = level_style(g.used_mib / g.total_mib)
            if bars and level != style:
                text.append(bars, style=style)
                bars = ""
            bars, style = bars + bar_for(g.used_mib, g.total_mib), level
    if bars:
        text.append(bars, style=style)
    frac = summary.used_mib / summary.total_mib if summary.total_mib else 0.0
    text.append(f" {summary.used_mib / 1024:.1f}", style=level_style(frac))
    text.append(f"/{summary.total_mib / 1024:.0f} GiB")
    return text


def runs_text(count: int, health: str | None, silence: float | None = None) -> Text:
    """ "2 runs stalled": the live runs and their worst health; "no live run, last failed" when the
    newest run there ended badly; "no runs" otherwise. With `silence`, the live runs' health is stale:
    "2 runs ready, last seen 35s ago"."""
    if not count:
        if health == "failed":
            text = Text("no live run, last ", style="dim")
            text.append("failed", style=HEALTH_STYLE["failed"])
            return text
        return Text("no runs", style="dim")
    text = Text(f"{count} run{'s' if count != 1 else ''} ")
    if silence is not None:
        return text.append_text(stale_text(health or "?", silence))
    text.append(health or "?", style=HEALTH_STYLE.get(health or "", ""))
    return text


def host_label(
    host: HostModel,
    runs: tuple[int, str | None] = (0, None),
    width: int = NAME_WIDTH,
    silence: float | None = None,
    fits: bool = False,
) -> Text:
    """`silence`: how long the host's live runs' health has gone unconfirmed (a frozen link), else None.
    `fits`: the launch in view has room here (`HostModel.fits`): the name in green and "✓ fits" after
    the GPUs."""
    mark, style = STATE_MARK.get(host.state, ("?", "dim"))
    text = Text(f"{mark} ", style=style)
    text.append(Text(host.name.ljust(width), style="bold green" if fits else "bold"))
    state = host.state
    age = age_text(host.state_age)
    text.append(f" {state}", style=style)
    text.append(f" {age}".ljust(STATE_WIDTH - len(state)), style="dim")
    if state == "connected":
        text.append(" ")
        gpus = gpu_text(host)
        quiet = host_silence(host, host.ages.clock())
        if quiet is not None:  # the link went quiet: the last GPU numbers are no longer live
            gpus.stylize("dim")
            gpus.append(f" {age_text(quiet)} ago", style="bold yellow")
        text.append(gpus)
        if fits:
            text.append(" ✓ fits", style="bold green")
        text.append("  ")
        text.append(runs_text(*runs, silence))
    elif state == "lost" and host.gpus:  # the last values known, greyed: they are no longer live
        last = Text(" ")
        last.append(gpu_text_of(host))
        last.append("  ")
        last.append(runs_text(*runs))
        last.stylize("dim strike")
        text.append(last)
    elif host.detail:  # why it is not connected, in one line
        text.append(" ")
        text.append(Text(host.detail.splitlines()[0], style="dim"))
    if host.also:  # other configured names reaching this same machine and login: one row for them all
        text.append(f"  also reachable as {', '.join(host.also)}", style="dim")
    return text


def container_label(c: ContainerView, live: bool = True) -> Text:
    """`live`: its host is connected; otherwise the row is greyed (its status is the last one known)."""
    text = Text(c.label)
    if c.status:
        text.append(f" {c.status}", style="green" if c.status == "running" else "dim")
    if c.gpus:
        text.append(" GPU " + ",".join(str(g) for g in c.gpus), style="cyan")
    if not live:
        text.stylize("dim")
    return text


def _set_label(node: TreeNode[Pick], label: Text) -> None:
    """`TreeNode.set_label` without the repaint message it queues per node (each scanning the lines on
    screen): the pane relabels the rows on screen each second and repaints the tree once. The node's
    update count is what Tree's line cache keys on, so the row is drawn anew."""
    node._label = node.tree.process_label(label)
    node._updates += 1


def matches(needle: str, *haystack: str) -> bool:
    return not needle or any(needle in h.lower() for h in haystack)


HIDDEN_ROWS = 60  # rows kept labelled while the hosts tab is not shown
ORDERS = ("configured", "free memory")  # `o` cycles; "free memory": most free GPU memory first


class FleetPane(Vertical):
    class Picked(Message):
        def __init__(self, pick: Pick) -> None:
            super().__init__()
            self.pick = pick

    DEFAULT_CSS = """
    FleetPane > #host-filter { margin-bottom: 0; }
    FleetPane > Tree { height: 1fr; }
    """

    def __init__(self, fleet: FleetState, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.fleet = fleet
        self.state_of: StateOf = lambda run: run.state
        self.runs_silence: Silence = lambda name: None
        self.fit_need: Callable[[], FitNeed | None] = lambda: None
        self.order = ORDERS[0]
        self._sorted: list[str] | None = None  # the free-memory order, as of the last sort
        self._generation = 0  # refresh_fleet calls; a label made for an older one is stale
        self._drawn: dict[str, int] = {}  # host -> the generation its row's label was made for
        self.rates: Callable[[str], str] = lambda name: ""  # host -> its ready runs' tokens/s, or ""
        self.unfolded: set[str] = set()
        self._host_nodes: dict[str, TreeNode[Pick]] = {}
        self._shape: tuple[object, ...] = ()
        self._refreshed_at = self._rebuilt_at = float("-inf")  # time.monotonic() of the last of each
        self._pending: Timer | None = None  # a refresh put off by REFRESH_GAP_S or REBUILD_GAP_S

    def compose(self) -> ComposeResult:
        yield Input(placeholder="filter hosts by name or state, and containers", id="host-filter")
        tree: Tree[Pick] = Tree("hosts", id="host-tree")
        tree.show_root = False
        tree.auto_expand = True
        yield tree

    @property
    def tree(self) -> Tree[Pick]:
        return self.query_one("#host-tree", Tree)

    @property
    def hosts(self) -> dict[str, HostModel]:
        """The hosts with a row: a second name for a machine already shown is "also reachable as" on it."""
        return self.fleet.shown()

    def on_mount(self) -> None:
        self.watch(self.tree, "scroll_y", self._relabel_visible, init=False)

    def on_resize(self) -> None:
        self._generation += 1
        self.call_after_refresh(self._relabel_visible)

    def refresh_fleet(self) -> None:
        """Redraw from the fleet state now: the labels on screen in place when only values changed (ages,
        GPUs, runs: 500 hosts relabelled every second would hold the app up; a row scrolled into view is
        relabelled then), the whole tree when hosts, containers, states, the order or the filter did."""
        self._draw(rebuild=True)

    def refresh_soon(self) -> None:
        """A host's own change (its state, machine, containers, runs: what 500 hosts connecting send by the
        thousand): drawn within REFRESH_GAP_S, the tree rebuilt at most every REBUILD_GAP_S."""
        now = time.monotonic()
        if now - self._refreshed_at < REFRESH_GAP_S:
            self._put_off_until(self._refreshed_at + REFRESH_GAP_S)
            return
        self._draw(rebuild=now - self._rebuilt_at >= REBUILD_GAP_S)

    def _draw(self, *, rebuild: bool) -> None:
        needle = self.query_one("#host-filter", Input).value.strip().lower()
        shape = (
            needle,
            self.order,
            tuple((n, h.containers_error, tuple(h.containers), h.state) for n, h in self.hosts.items()),
        )
        self._refreshed_at = now = time.monotonic()
        self._generation += 1  # every label on screen is made again (ages moved)
        if shape != self._shape:
            if rebuild or shape[:2] != self._shape[:2]:  # the filter or the order: what the user just did
                self._shape, self._rebuilt_at = shape, now
                self._rebuild(needle)
                return
            self._put_off_until(self._rebuilt_at + REBUILD_GAP_S)
        self._relabel_visible()

    def _put_off_until(self, at: float) -> None:
        if self._pending is None:
            self._pending = self.set_timer(max(0.0, at - time.monotonic()), self._put_off)

    def _put_off(self) -> None:
        self._pending = None
        self.refresh_soon()

    def _relabel_visible(self, _scroll: float = 0.0) -> None:
        """The host rows on screen not yet labelled for this tick get their label; one repaint."""
        tree = self.tree
        width, need = self._name_width(), self.fit_need()
        top = int(tree.scroll_offset.y)
        changed = False
        # a hidden tab has no height: its first rows are kept current, so that it opens current
        for line in range(top, top + (tree.size.height or HIDDEN_ROWS)):
            node = tree.get_node_at_line(line)
            if node is None:
                break
            if node.data is None or node.data.container is not None:
                continue
            if self._drawn.get(node.data.host) != self._generation:
                self._drawn[node.data.host] = self._generation
                _set_label(node, self._label(node.data.host, width, need))
                changed = True
        if changed:
            tree.refresh()

    def cycle_order(self) -> str:
        """`o`: configured order <-> most free GPU memory first (sorted now; `o` twice sorts again)."""
        self.order = ORDERS[(ORDERS.index(self.order) + 1) % len(ORDERS)]
        self._sorted = None
        self.refresh_fleet()
        return self.order

    def _names(self) -> list[str]:
        hosts = self.hosts  # built afresh on each access: once here
        if self.order == ORDERS[0]:
            return list(hosts)
        if self._sorted is None or set(self._sorted) != set(hosts):
            self._sorted = sorted(hosts, key=lambda n: (hosts[n].state != "connected", -hosts[n].free_mib()))
        return self._sorted

    def _label(self, name: str, width: int, need: FitNeed | None = None) -> Text:
        health = self.fleet.run_health(name, self.state_of)
        host = self.fleet.hosts[name]
        label = host_label(host, health, width, self.runs_silence(name), host.fits(need))
        rate = self.rates(name) if host.state == "connected" else ""
        return label.append(f" · {rate}", style="cyan") if rate else label

    def _name_width(self) -> int:
        return min(max((len(n) for n in self.hosts), default=4), NAME_WIDTH)

    def _rebuild(self, needle: str) -> None:
        tree = self.tree
        cursor = tree.cursor_node.data if tree.cursor_node is not None else None
        tree.clear()
        self._host_nodes = {}
        target_line = None
        width, need = self._name_width(), self.fit_need()
        shown = self.hosts
        for name in self._names():
            host = shown[name]
            kids = [
                c for c in host.containers if matches(needle, name, c.label, c.status, c.name, host.address)
            ]
            if not kids and not matches(needle, name, host.address, host.source, host.state, *host.also):
                continue
            label = self._label(name, width, need)
            self._drawn[name] = self._generation
            unfold = name in self.unfolded or bool(needle and kids)
            node = tree.root.add(label, data=Pick(name, None), expand=unfold)
            self._host_nodes[name] = node
            if cursor == node.data:
                target_line = node
            for c in kids:
                leaf = node.add_leaf(container_label(c, host.state == "connected"), data=Pick(name, c))
                if cursor == leaf.data:
                    target_line = leaf
            if host.containers_error:
                node.add_leaf(Text(host.containers_error, style="red"))
        if target_line is not None:
            tree.move_cursor(target_line)

    @on(Input.Changed, "#host-filter")
    def _filter(self, event: Input.Changed) -> None:
        event.stop()
        self.refresh_fleet()

    @on(Input.Submitted, "#host-filter")
    def _to_tree(self, event: Input.Submitted) -> None:
        event.stop()
        self.tree.focus()

    @on(Tree.NodeExpanded, "#host-tree")
    def _unfolded(self, event: Tree.NodeExpanded[Pick]) -> None:
        event.stop()
        if event.node.data is not None:
            self.unfolded.add(event.node.data.host)

    @on(Tree.NodeCollapsed, "#host-tree")
    def _folded(self, event: Tree.NodeCollapsed[Pick]) -> None:
        event.stop()
        if event.node.data is not None:
            self.unfolded.discard(event.node.data.host)

    @on(Tree.NodeSelected, "#host-tree")
    def _picked(self, event: Tree.NodeSelected[Pick]) -> None:
        event.stop()
        if event.node.data is not None:
            self.post_message(self.Picked(event.node.data))
