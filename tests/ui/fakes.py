"""A scripted Backend for UI tests: fixed hosts, GPUs and logs, no clocks, no network."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Collection
from dataclasses import dataclass, field
from typing import Any

from sgtui.ui.backend import RunExit
from sgtui.ui.views import ContainerView, GpuProcessView, GpuView, HostView, RunView

A6000_MIB = 49140


def gpus(used: tuple[int, int] = (512, 512), holder: str = "") -> list[GpuView]:
    procs = (GpuProcessView(4242, "sglang::scheduler", used[0] - 500, "lxc 129"),) if holder else ()
    return [
        GpuView(0, "NVIDIA RTX A6000", used[0], A6000_MIB, 37, procs),
        GpuView(1, "NVIDIA RTX A6000", used[1], A6000_MIB, 35, ()),
    ]


QWEN_CONFIG: dict[str, Any] = {
    "architectures": ["Qwen3_5ForConditionalGeneration"],
    "model_type": "qwen3_5",
    "text_config": {
        "model_type": "qwen3_5_text",
        "num_hidden_layers": 64,
        "hidden_size": 5120,
        "num_attention_heads": 24,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "intermediate_size": 17408,
        "vocab_size": 248320,
        "max_position_embeddings": 262144,
        "full_attention_interval": 4,
        "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"] * 16,
        "linear_num_key_heads": 16,
        "linear_num_value_heads": 48,
        "linear_key_head_dim": 128,
        "linear_value_head_dim": 128,
        "linear_conv_kernel_dim": 4,
        "mtp_num_hidden_layers": 1,
        "torch_dtype": "bfloat16",
    },
    "torch_dtype": "bfloat16",
}


@dataclass
class FakeBackend:
    """Each launch plays the next script in `launch_logs`; `tail` yields it in fixed chunks."""

    launch_logs: list[list[str]] = field(default_factory=list)
    existing_runs: list[RunView] = field(default_factory=list)
    existing_logs: dict[str, list[str]] = field(default_factory=dict)
    gpu_frames: list[list[GpuView]] = field(default_factory=lambda: [gpus()])
    version: str | None = "0.5.9"
    states: list[tuple[str, str]] = field(default_factory=lambda: [("connecting", ""), ("connected", "")])
    launched: list[Any] = field(default_factory=list)
    exit_codes: dict[str, int] = field(default_factory=dict)  # run id -> its exit code once the log ends
    exit_notes: dict[str, str] = field(default_factory=dict)  # run id -> the host's note once it ended
    running_notes: dict[str, str] = field(default_factory=dict)  # run id -> the host's note while it runs
    stopped: list[str] = field(default_factory=list)
    gpu_wait_lines: list[str] = field(default_factory=lambda: ["GPU0 still holds 31.2 GiB (pid 4242)"])
    hold_tail: bool = False
    target_flag_rows: list[dict[str, Any]] | None = None  # the target's own table; None: the shipped one
    flag_table_problem: str | None = None
    password_prompt: Any = None
    key_answers: list[tuple[str, bool]] = field(default_factory=list)
    closed: bool = False
    retried: list[str] = field(default_factory=list)
    machines: dict[str, str | None] = field(default_factory=dict)  # host -> its identity; default: its own
    checks: list[Any] = field(default_factory=list)  # what preflight_checks answers (core.preflight.Check)
    holders_shown: list[set[str]] = field(default_factory=list)  # each `show_holders` the app asked, in order
    checked: list[Any] = field(default_factory=list)  # the profiles the checks were asked for
    _state_queue: asyncio.Queue[tuple[str, str]] | None = None

    def hosts(self) -> tuple[list[HostView], list[str]]:
        return [HostView("pve", "10.0.0.5", "ssh config"), HostView("gpu2", "10.0.0.6", "hosts.yaml")], []

    async def connection_states(self, host: str) -> AsyncIterator[tuple[str, str]]:
        if host != "pve":
            yield ("connecting", "")
            yield ("failed", "no route to host")
            return
        self._state_queue = asyncio.Queue()
        for s in self.states:
            yield s
        while True:
            yield await self._state_queue.get()

    def push_state(self, state: str, detail: str = "") -> None:
        assert self._state_queue is not None
        self._state_queue.put_nowait((state, detail))

    async def machine(self, host: str) -> str | None:
        return self.machines.get(host, f"machine of {host}")

    async def containers(self, host: str) -> list[ContainerView]:
        return [
            ContainerView("pct", "129", "sglang", "running", (0, 1)),
            ContainerView("docker", "vllm", "vllm", "exited"),
        ]

    async def sglang_version(self, host: str, target: ContainerView | None, python: str) -> str | None:
        return self.version

    async def flag_table(
        self, host: str, target: ContainerView | None, python: str, version: str
    ) -> tuple[Any, str | None]:
        from sgtui.core.sglang.flags import table_for

        if self.target_flag_rows is not None:
            from sgtui.core.sglang.flags import table_from_rows

            return table_from_rows(self.target_flag_rows, version), None
        return table_for(version), self.flag_table_problem

    async def model_config(
        self, host: str, target: ContainerView | None, model_path: str
    ) -> dict[str, Any] | None:
        return {"config": QWEN_CONFIG, "weight_bytes": 55_600_000_000}

    def show_holders(self, hosts: Collection[str]) -> None:
        self.holders_shown.append(set(hosts))

    async def gpu_samples(self, host: str) -> AsyncIterator[list[GpuView]]:
        for frame in self.gpu_frames:
            yield frame
        await asyncio.Event().wait()

    async def runs(
        self, host: str, target: ContainerView | None, runs_dir: str | None = None
    ) -> list[RunView]:
        return list(self.existing_runs)

    async def launch(self, profile: Any) -> list[RunView]:
        self.launched.append(profile)
        n = len(self.launched)
        run = RunView(f"run-{n}", "pve", "lxc 129", profile.name, "starting", f"/var/log/sgtui/run-{n}.log")
        self.existing_logs[run.run_id] = self.launch_logs[n - 1] if n <= len(self.launch_logs) else []
        self.existing_runs.append(run)
        return [run]

    async def preflight_checks(self, profile: Any) -> list[Any]:
        self.checked.append(profile)
        return list(self.checks)

    async def tail(self, run: RunView, offset: int) -> AsyncIterator[tuple[int, list[str]]]:
        key = run.run_id if run.node_rank is None else f"{run.run_id}:{run.node_rank}"
        lines = self.existing_logs.get(key, [])
        pos = offset
        for i in range(0, len(lines), 5):
            chunk = lines[i : i + 5]
            pos += sum(len(line) + 1 for line in chunk)
            yield pos, chunk
            await asyncio.sleep(0)
        if self.hold_tail:
            await asyncio.Event().wait()

    async def run_state(self, run: RunView) -> str:
        return (await self.run_exit(run)).state

    async def run_exit(self, run: RunView) -> RunExit:
        if run.run_id in self.running_notes:  # still running, with the host's word (its run dir removed)
            return RunExit("running", None, self.running_notes[run.run_id])
        rc = self.exit_codes.get(run.run_id)
        note = self.exit_notes.get(run.run_id, "")
        # as remote_views.run_state_name: gone without an exit code (and no stop recorded) is dead
        state = "dead" if note and rc is None else "exited" if not rc else "failed"
        return RunExit(state, rc, note)

    async def stop_preview(self, run: RunView) -> str:
        return f"process group {run.pgid or 4242}: 3 process(es), owner root (uid 0), running for 12 s"

    async def stop(self, run: RunView) -> None:
        self.stopped.append(run.run_id)

    async def wait_gpus_free(self, run: RunView, timeout: float) -> AsyncIterator[str]:
        for line in self.gpu_wait_lines:
            yield line

    def set_password_prompt(self, prompt: Any) -> None:
        self.password_prompt = prompt

    def trust_host_key(self, host: str, trusted: bool) -> None:
        self.key_answers.append((host, trusted))

    def retry(self, host: str) -> None:
        self.retried.append(host)

    async def close(self) -> None:
        self.closed = True
