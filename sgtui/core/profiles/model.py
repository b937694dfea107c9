"""The typed profile: where SGLang runs (`Target`, node 0's host or every `Node`), with which flags, and
the problems a profile can have (`Problem`, `ProfileError`, `ProfileEntry`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sgtui.core.errors import UserError
from sgtui.core.profiles.nodes import Node, node_flags
from sgtui.core.sglang.flags import FlagTable, LaunchSpec, spec_from_values, to_argv


@dataclass(frozen=True)
class Target:
    """Where the server process lives on the host: the host itself, a Proxmox LXC, or a Docker container."""

    kind: str = "host"
    id: int | str | None = None


@dataclass
class Profile:
    name: str
    host: str
    python: str
    sglang: dict[str, Any]  # canonical dashed flag -> typed value (as flags.parse_argv gives them)
    target: Target = field(default_factory=Target)
    env: dict[str, str] = field(default_factory=dict)
    gpus: list[int] | None = None
    sglang_version: str | None = None
    source: Path | None = None
    # the target's own flag table once read (not saved); None: the shipped one for sglang_version
    flags: FlagTable | None = field(default=None, compare=False, repr=False)
    runs_dir: str | None = None  # where on the target its runs live; None: hosts.yaml's, else the default
    keep_runs: int | None = None  # ended runs kept on its target; None: hosts.yaml's, else the default
    # multi-node: node rank = position; `host`/`target` above are node 0's
    nodes: list[Node] | None = None
    dist_init_addr: str | None = None

    @property
    def nnodes(self) -> int:
        return len(self.nodes) if self.nodes else 1

    def node_argv(self, rank: int, dist_init_addr: str) -> list[str]:
        """Node `rank`'s `sglang.launch_server` arguments: the common flags plus its rank."""
        return [*self.argv, *node_flags(self.nnodes, rank, dist_init_addr)]

    def node_env(self, rank: int) -> dict[str, str]:
        """`env` with node `rank`'s own variables on top."""
        extra = self.nodes[rank].env if self.nodes else {}
        return {**self.env, **extra}

    @property
    def spec(self) -> LaunchSpec:
        return spec_from_values(self.sglang, self.flags or self.sglang_version)

    @property
    def argv(self) -> list[str]:
        """The `sglang.launch_server` arguments (after `python -m sglang.launch_server`)."""
        return to_argv(self.sglang, self.flags or self.sglang_version)


@dataclass(frozen=True)
class Problem:
    file: str
    line: int | None
    flag: str | None
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        return f"{where}: {self.flag}: {self.message}" if self.flag else f"{where}: {self.message}"


class ProfileError(UserError):
    """Every problem found in one profile, one per line as `file:line: flag: message`."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


@dataclass(frozen=True)
class ProfileEntry:
    """One file of a profiles folder: the profile, or why it did not load (the others still do)."""

    path: Path
    profile: Profile | None
    error: ProfileError | None
