"""Hosts (ssh config + sgtui hosts file) with live connection state, and each host's containers."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input, Tree

from sgtui.ui.views import ContainerView, HostView

STATE_MARK = {
    "connected": ("●", "green"),
    "connecting": ("◌", "yellow"),
    "lost": ("●", "red"),
    "failed": ("✗", "red"),
    "unknown-key": ("?", "yellow"),
    "idle": ("○", "dim"),
}


@dataclass(frozen=True)
class Pick:
    host: str
    container: ContainerView | None


def host_label(host: HostView) -> Text:
    mark, style = STATE_MARK.get(host.state, ("?", "dim"))
    text = Text(f"{mark} ", style=style)
    text.append(host.name, style="bold")
    if host.detail.startswith(host.state):  # "connected to 10.0.0.5:22" says the state already
        text.append(f" {host.state}", style=style)
        text.append(host.detail.removeprefix(host.state), style="dim")
        return text
    text.append(f" {host.state}", style=style)
    if host.detail:
        text.append(f" {host.detail}", style="dim")
    return text


def container_label(c: ContainerView) -> Text:
    text = Text(c.label)
    if c.status:
        text.append(f" {c.status}", style="green" if c.status == "running" else "dim")
    if c.gpus:
        text.append(" GPU " + ",".join(str(g) for g in c.gpus), style="cyan")
    return text


def matches(needle: str, *haystack: str) -> bool:
    return not needle or any(needle in h.lower() for h in haystack)


class HostPicker(Vertical):
    class Picked(Message):
        def __init__(self, pick: Pick) -> None:
            super().__init__()
            self.pick = pick

    DEFAULT_CSS = """
    HostPicker > #host-filter { margin-bottom: 0; }
    HostPicker > Tree { height: 1fr; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.hosts: dict[str, HostView] = {}
        self.containers: dict[str, list[ContainerView]] = {}
        self.errors: dict[str, str] = {}

    def compose(self) -> ComposeResult:
        yield Input(placeholder="filter hosts and containers", id="host-filter")
        tree: Tree[Pick] = Tree("hosts", id="host-tree")
        tree.show_root = False
        yield tree

    @property
    def tree(self) -> Tree[Pick]:
        return self.query_one("#host-tree", Tree)

    def set_hosts(self, hosts: list[HostView]) -> None:
        self.hosts = {h.name: h for h in hosts}
        self.rebuild()

    def set_state(self, host: str, state: str, detail: str) -> None:
        old = self.hosts.get(host, HostView(host))
        self.hosts[host] = HostView(old.name, old.address, old.source, state, detail)
        self.rebuild()

    def set_containers(self, host: str, containers: list[ContainerView], error: str = "") -> None:
        self.containers[host] = containers
        self.errors[host] = error
        self.rebuild()

    @on(Input.Changed, "#host-filter")
    def _filter(self, event: Input.Changed) -> None:
        event.stop()
        self.rebuild()

    @on(Input.Submitted, "#host-filter")
    def _to_tree(self, event: Input.Submitted) -> None:
        event.stop()
        self.tree.focus()

    def rebuild(self) -> None:
        needle = self.query_one("#host-filter", Input).value.strip().lower()
        tree = self.tree
        cursor = tree.cursor_node.data if tree.cursor_node is not None else None
        tree.clear()
        target_line = None
        for name, host in self.hosts.items():
            kids = [
                c
                for c in self.containers.get(name, [])
                if matches(needle, name, c.label, c.status, c.name, host.address)
            ]
            if not kids and not matches(needle, name, host.address, host.source):
                continue
            node = tree.root.add(host_label(host), data=Pick(name, None), expand=True)
            if cursor == node.data:
                target_line = node
            for c in kids:
                leaf = node.add_leaf(container_label(c), data=Pick(name, c))
                if cursor == leaf.data:
                    target_line = leaf
            if self.errors.get(name):
                node.add_leaf(Text(self.errors[name], style="red"))
        if target_line is not None:
            tree.move_cursor(target_line)

    @on(Tree.NodeSelected, "#host-tree")
    def _picked(self, event: Tree.NodeSelected[Pick]) -> None:
        event.stop()
        if event.node.data is not None:
            self.post_message(self.Picked(event.node.data))
