"""What can go wrong with a run, and how it is told: `RunError` and its kinds, and the one sentence (with
what to do) for each way a launch fails before its server started."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sgtui.core.nvsmi import GpuProcess
from sgtui.remote.run_records import LOG_NAME, RunRecord
from sgtui.remote.targets import Target, explain_failure
from sgtui.remote.transport import RemoteError, Result


class RunError(RemoteError):
    """A run could not be launched, inspected or stopped; the message says which and why."""


class PidReusedError(RunError):
    """The recorded pid now belongs to another process: sgtui will not signal it."""


class ForeignRunError(RunError):
    """The run (or the runs dir) is not this user's, or its record cannot be verified: nothing is done."""


class LaunchUnknownError(RunError):
    """The connection dropped while the launch script ran: the detached server may have started (or
    not). The message says so and how to check; it never says the launch failed. `run_id`: its id."""

    maybe_running = True

    def __init__(self, message: str, run_id: str) -> None:
        super().__init__(message)
        self.run_id = run_id


class GpusBusyError(RunError):
    """The GPUs were not freed in time; `holders` name who still holds memory."""

    def __init__(self, message: str, holders: list[GpuProcess]) -> None:
        super().__init__(message)
        self.holders = holders


def where_of(host: str, target: Target) -> str:
    """How messages name a run's place: the host, and the container on it when it is in one."""
    return f"{host} {target.label}" if target.kind != "host" else host


def refuse_foreign(run: RunRecord, where: str, doing: str) -> None:
    """Raise ForeignRunError unless `run` is one this user may act on (`where`: host and target)."""
    why = run.foreign
    if why is None and run.start is None:
        why = "its record has no start time (start: null), so its pid cannot be told from a reused one"
    if why is not None:
        raise ForeignRunError(f"{where}: refusing to {doing} run {run.id}: {why}; nothing was done")


def launch_failure(
    marker: Mapping[str, Any],
    host: str,
    target: Target,
    where: str,
    run_dir: str,
    argv: Sequence[str],
    result: Result,
) -> str:
    """The detach script's error marker -> the sentence for the user (`where`: host and target)."""
    error, why = str(marker["error"]), str(marker.get("why") or "")
    exe = argv[0]
    if error == "log-exists":
        return f"{host}: log {run_dir}/{LOG_NAME} already exists; refusing to reuse it"
    if error == "not-executable" and list(argv[1:2]) == ["serve"]:
        return (
            f"SGLang's `sglang` command {exe} (beside the profile's `python:`) does not exist or is not "
            f"executable on {where}: install SGLang into that environment, or set `python:` to the "
            "python of the environment where it is installed"
        )
    if error == "not-executable":
        return (
            f"the interpreter {exe} does not exist or is not executable on {where}: set the profile's "
            "`python:` to the python of the environment where SGLang is installed"
        )
    if error == "no-module":
        module = argv[2].split(".")[0] if len(argv) > 2 else "its"
        return (
            f"{exe} on {where} has no {module} module: install SGLang into that environment, or set the "
            "profile's `python:` to the environment that has it"
        )
    if error == "unsafe":
        return (
            f"{where}: refusing the runs dir: {why}. sgtui keeps runs only in a directory that is yours "
            "alone; set runs_dir (hosts.yaml or the profile) to one, or fix its owner and mode"
        )
    if error == "no-home":
        return f"{where}: {why}"
    if error == "run-dir":
        return explain_failure(host, target, result, f"create the run directory {run_dir}")
    return explain_failure(host, target, result, f"write the run files in {run_dir}")
