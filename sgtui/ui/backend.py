"""What the UI needs from the hosts, as one small async interface.

`RemoteBackend` (sgtui.ui.remote_backend) implements it over sgtui.remote; tests implement it with fakes.
The controller is the only caller, from workers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from typing import Any, NamedTuple, Protocol

from sgtui.ui.views import ContainerView, GpuView, HostView, RunView


class RunExit(NamedTuple):
    """How a run ended, as the host says: its state, its exit code once it exited by itself, and why
    beyond the state's name (`RunStatus.note`: the disk holding the log was full, its container is gone)."""

    state: str
    rc: int | None = None
    note: str = ""


class Backend(Protocol):
    def hosts(self) -> tuple[list[HostView], list[str]]:
        """The known hosts, and problems found reading the config files (shown, not fatal)."""
        ...

    def connection_states(self, host: str) -> AsyncIterator[tuple[str, str]]:
        """Connect and keep connected; yields (state, detail) on every change, forever. The state
        "unknown-key" (detail: the key's fingerprint) waits for `trust_host_key`."""
        ...

    async def machine(self, host: str) -> str | None:
        """Which machine and login `host` reaches once connected (`remote/identity.py`), None when it
        cannot be told: two host names with the same answer are one place, shown once."""
        ...

    async def containers(self, host: str) -> list[ContainerView]: ...

    async def sglang_version(self, host: str, target: ContainerView | None, python: str) -> str | None: ...

    async def flag_table(
        self, host: str, target: ContainerView | None, python: str, version: str
    ) -> tuple[Any, str | None]:
        """(FlagTable, problem): the target's own flag table, or the shipped one and a one-line reason."""
        ...

    async def model_config(
        self, host: str, target: ContainerView | None, model_path: str
    ) -> dict[str, Any] | None:
        """The model's config.json (for the fit), or None when it cannot be read there."""
        ...

    def gpu_samples(self, host: str) -> AsyncIterator[list[GpuView]]: ...

    def show_holders(self, hosts: Collection[str]) -> None:
        """The hosts whose GPU holders are on screen (the GPU panel's): their `gpu_samples` carry holders
        listed every few seconds; any other host's, listed when its memory moves (`ui/holder_refresh.py`)."""
        ...

    async def runs(
        self, host: str, target: ContainerView | None, runs_dir: str | None = None
    ) -> list[RunView]:
        """The runs recorded on the target (in `runs_dir`, a profile's own, when given), oldest first,
        each with its current state ("foreign" for a record this user may not act on)."""
        ...

    async def launch(self, profile: Any) -> list[RunView]:
        """One record per node (one for a single-node profile), node 0 first."""
        ...

    async def preflight_checks(self, profile: Any) -> list[Any]:
        """The target checks before launching `profile` (`core.preflight.Check`, one line each): its port
        free, its GPUs not held by others, its model path, the installed release (node 0 of a multi-node
        profile)."""
        ...

    def tail(self, run: RunView, offset: int) -> AsyncIterator[tuple[int, list[str]]]:
        """Log lines from byte `offset`; yields (offset after them, lines). Complete lines while the run
        lives; once it has ended, the rest of the log too, a last line without a newline included, and
        then the iterator ends."""
        ...

    async def run_state(self, run: RunView) -> str: ...

    async def run_exit(self, run: RunView) -> RunExit:
        """The run's state and, once it has exited by itself, its exit code (None while unknown): the
        classifier's `process_exited(rc)` needs it, as `sgtui launch --watch` does; and the host's note
        on why it ended so (shown with the run's state and in the diagnosis panel)."""
        ...

    async def stop_preview(self, run: RunView) -> str:
        """What a stop would hit, read from the target, as plain text: pgid, owner, age, the group
        leader's command line next to the recorded one (with a warning when they differ). Raises for a
        run that is not this user's."""
        ...

    async def stop(self, run: RunView) -> str | None:
        """Stop the run (TERM to its server's main process, the drain, then TERM and KILL to its group);
        returns its steps with their times in one line (`StopResult.summary`), or None when unknown.
        Raises when something of it is left (survivors, or processes outside its group)."""
        ...

    def wait_gpus_free(self, run: RunView, timeout: float) -> AsyncIterator[str]:
        """Yields progress lines while the run's GPUs still hold memory; raises TimeoutError on timeout."""
        ...

    def set_password_prompt(self, prompt: Callable[[str], Awaitable[str | None]]) -> None:
        """How to ask the user for a password when a host wants one (the app's modal)."""
        ...

    def trust_host_key(self, host: str, trusted: bool) -> None:
        """The user's answer to an "unknown-key" state: record the key and connect, or give up."""
        ...

    def retry(self, host: str) -> None:
        """Forget a host-key or login failure of `host` (the user fixed known_hosts or the key), so the
        next connection attempt is a real one."""
        ...

    async def close(self) -> None: ...
