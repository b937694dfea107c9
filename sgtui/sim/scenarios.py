"""Named scenarios for the simulated GPU host: its GPUs, containers, SGLang installs and misbehaviours.

Each scenario reproduces one situation from real incident reports (see DESIGN.md) so that the demo and the
tests meet it on demand: the A6000 pair that runs out of memory on SGLang 0.5.9, the RTX PRO 6000 whose
extra_buffer Mamba strategy does not fit, a port still held by an old server, a server that ignores TERM,
memory that lingers after a kill, another user's process on a GPU.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from sgtui.core.errors import UserError

A6000_MIB = 49140
RTX_PRO_6000_MIB = 97887


@dataclass(frozen=True)
class SimGpu:
    """One GPU as nvidia-smi names it, with its total memory in MiB."""

    name: str
    total_mib: int


@dataclass(frozen=True)
class SimVenv:
    """An SGLang install inside a container: `<path>/bin/python` runs SGLang `version`."""

    path: str
    version: str

    @property
    def python(self) -> str:
        return f"{self.path}/bin/python"


@dataclass(frozen=True)
class SimContainer:
    """A Proxmox LXC container: which host GPUs are passed through and which SGLang installs it has."""

    vmid: int
    name: str
    running: bool = True
    gpus: tuple[int, ...] = ()
    venvs: tuple[SimVenv, ...] = ()


@dataclass(frozen=True)
class ForeignProcess:
    """A process of someone else holding GPU memory: a pid that is not ours and never goes away."""

    pid: int
    name: str
    gpu: int
    mib: int
    user: str


@dataclass(frozen=True)
class Scenario:
    """Everything that makes one simulated host behave the way a real incident did."""

    name: str
    description: str
    hostname: str = "sim"
    gpus: tuple[SimGpu, ...] = ()
    containers: tuple[SimContainer, ...] = ()
    foreign: tuple[ForeignProcess, ...] = ()
    # Ports held by some other listener for as long as the host runs (an old server that never died).
    busy_ports: tuple[int, ...] = ()
    # The server keeps running after SIGTERM; only SIGKILL stops it.
    ignore_term: bool = False
    # Seconds (before the speed factor) that GPU memory stays held after a server's process has exited.
    release_delay_s: float = 1.0
    # Demo profiles written by `sgtui sim-host` into the config dir: file name -> YAML text.
    profiles: dict[str, str] = field(default_factory=dict)
    # The SGLang stand-in's ranks on this host never reach the store at --dist-init-addr (as when NCCL/GLOO
    # picked a network interface that cannot reach node 0): distributed init never completes anywhere.
    dist_init_hang: bool = False
    # In a simulated fleet (`--hosts K`), host number N (1 = `sim`, 2 = `sim-2`, ...) is this scenario
    # instead of the fleet's own one.
    per_host: dict[int, Scenario] = field(default_factory=dict)

    def for_host(self, number: int) -> Scenario:
        """The scenario of fleet host `number` (1-based)."""
        return self.per_host.get(number, self)


_QWEN_FLAGS = """\
  model-path: /opt/models/Qwen3.6-27B
  served-model-name: qwen3.6-27b
  tp-size: 2
  mem-fraction-static: 0.85
  context-length: 32768
  speculative-algorithm: NEXTN
  speculative-num-steps: 3
  speculative-eagle-topk: 1
  speculative-num-draft-tokens: 4
  reasoning-parser: qwen3
  tool-call-parser: qwen3_coder
  host: 127.0.0.1
  port: 30000
"""


def _a6000_profile(name: str, python: str, extra: str = "", sglang_version: str = "0.5.9") -> str:
    return (
        f"name: {name}\n"
        "host: sim\n"
        "target:\n  kind: pct\n  id: 129\n"
        f"python: {python}\n"
        f'sglang_version: "{sglang_version}"\n'
        "gpus: [0, 1]\n"
        'env:\n  CUDA_VISIBLE_DEVICES: "0,1"\n'
        "sglang:\n" + _QWEN_FLAGS + extra
    )


def _pro6000_profile(name: str, extra: str) -> str:
    return (
        f"name: {name}\n"
        "host: sim\n"
        "target:\n  kind: pct\n  id: 131\n"
        "python: /opt/sglang/venv/bin/python\n"
        'sglang_version: "0.5.11"\n'
        "gpus: [0]\n"
        "sglang:\n"
        "  model-path: /opt/models/Qwen3.6-27B\n"
        "  tp-size: 1\n"
        "  mem-fraction-static: 0.9\n"
        "  context-length: 65536\n"
        "  speculative-algorithm: NEXTN\n"
        "  speculative-num-steps: 3\n"
        "  speculative-eagle-topk: 1\n"
        "  speculative-num-draft-tokens: 4\n"
        "  port: 30000\n" + extra
    )


_VENV_059 = SimVenv("/opt/sglang/venv", "0.5.9")
_VENV_0511 = SimVenv("/opt/sglang-0.5.11/venv", "0.5.11")
_VENV_0523 = SimVenv("/opt/sglang-0.5.23/venv", "0.5.23")
_VENV_PRO = SimVenv("/opt/sglang/venv", "0.5.11")
_VENV_059_DOT = SimVenv("/opt/sglang/.venv", "0.5.9")  # the path the repository's example profile names

PROXMOX_A6000 = Scenario(
    name="proxmox-a6000",
    description=(
        "Proxmox host with 2x RTX A6000; LXC 129 gets GPUs 0 and 1, SGLang 0.5.9 in /opt/sglang/venv, "
        "0.5.11 and 0.5.23 in /opt/sglang-VERSION/venv. Qwen3.6-27B with MTP runs out of memory on 0.5.9 "
        "and starts with --max-running-requests 8."
    ),
    gpus=(SimGpu("NVIDIA RTX A6000", A6000_MIB), SimGpu("NVIDIA RTX A6000", A6000_MIB)),
    containers=(
        SimContainer(129, "sglang", True, (0, 1), (_VENV_059, _VENV_059_DOT, _VENV_0511, _VENV_0523)),
        SimContainer(130, "scratch", False, (), ()),
    ),
    release_delay_s=2.0,
    profiles={
        "qwen36-27b-2xa6000.yaml": _a6000_profile("qwen36-27b-2xa6000", _VENV_059.python),
        "qwen36-27b-2xa6000-mrr8.yaml": _a6000_profile(
            "qwen36-27b-2xa6000-mrr8", _VENV_059.python, "  max-running-requests: 8\n"
        ),
        "qwen36-27b-2xa6000-0511.yaml": _a6000_profile(
            "qwen36-27b-2xa6000-0511",
            _VENV_0511.python,
            "  disable-radix-cache: true\n  max-running-requests: 8\n",
            "0.5.11",
        ),
    },
)

RTX_PRO_6000 = Scenario(
    name="rtx-pro-6000",
    description=(
        "One RTX PRO 6000 Blackwell (96 GB) in LXC 131 with SGLang 0.5.11: Qwen3.6-27B with MTP, "
        "--mamba-scheduler-strategy extra_buffer and 128 running requests runs out of memory; without "
        "extra_buffer (radix cache off, 32 requests) it starts."
    ),
    gpus=(SimGpu("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", RTX_PRO_6000_MIB),),
    containers=(SimContainer(131, "sglang-pro", True, (0,), (_VENV_PRO,)),),
    profiles={
        "qwen36-27b-rtxpro6000-extra-buffer.yaml": _pro6000_profile(
            "qwen36-27b-rtxpro6000-extra-buffer",
            "  mamba-scheduler-strategy: extra_buffer\n  max-running-requests: 128\n",
        ),
        "qwen36-27b-rtxpro6000.yaml": _pro6000_profile(
            "qwen36-27b-rtxpro6000", "  disable-radix-cache: true\n  max-running-requests: 32\n"
        ),
    },
)

H100_MIB = 81559

H100X8 = Scenario(
    name="h100x8",
    description="A bare host with 8x H100 80GB and no containers (the fleet benchmark's hosts).",
    gpus=tuple(SimGpu("NVIDIA H100 80GB HBM3", H100_MIB) for _ in range(8)),
)

MULTINODE_PROFILE = "multinode-demo"


def multinode_profile(hosts: tuple[str, ...] = ("sim", "sim-2")) -> str:
    """Qwen3.6-27B with TP 4 across two A6000 hosts (2 GPUs each, LXC 129, SGLang 0.5.11)."""
    nodes = "".join(f"  - host: {h}\n    target: {{kind: pct, id: 129}}\n" for h in hosts)
    return (
        f"name: {MULTINODE_PROFILE}\n"
        f"nodes:\n{nodes}"
        f"python: {_VENV_0511.python}\n"
        'sglang_version: "0.5.11"\n'
        "gpus: [0, 1]\n"
        'env:\n  CUDA_VISIBLE_DEVICES: "0,1"\n'
        "sglang:\n"
        "  model-path: /opt/models/Qwen3.6-27B\n"
        "  served-model-name: qwen3.6-27b\n"
        f"  tp-size: {2 * len(hosts)}\n"
        "  mem-fraction-static: 0.85\n"
        "  context-length: 32768\n"
        "  disable-radix-cache: true\n"
        "  max-running-requests: 8\n"
        "  host: 127.0.0.1\n"
        "  port: 30000\n"
    )


_SKEWED_129 = SimContainer(
    129,
    "sglang",
    True,
    (0, 1),
    (_VENV_059, _VENV_059_DOT, SimVenv(_VENV_0511.path, "0.5.9"), _VENV_0523),
)

SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        PROXMOX_A6000,
        RTX_PRO_6000,
        H100X8,
        replace(
            PROXMOX_A6000,
            name="port-in-use",
            description="The A6000 host, with port 30000 still held by an old server that never died.",
            busy_ports=(30000,),
        ),
        replace(
            PROXMOX_A6000,
            name="ignore-term",
            description="The A6000 host, where SGLang ignores SIGTERM: only a group SIGKILL stops it.",
            ignore_term=True,
        ),
        replace(
            PROXMOX_A6000,
            name="slow-release",
            description="The A6000 host, where GPU memory stays held for 6 s after a server exits.",
            release_delay_s=6.0,
        ),
        replace(
            PROXMOX_A6000,
            name="other-user",
            description="The A6000 host, where another user's process holds 20 GiB on GPU 1.",
            foreign=(ForeignProcess(4190001, "/usr/bin/python3", 1, 20480, "alice"),),
        ),
        replace(
            PROXMOX_A6000,
            name="multinode-stall",
            description=(
                "A fleet of A6000 hosts (use --hosts 2 or more) where sim-2's SGLang ranks never reach the "
                "store at --dist-init-addr: multinode-demo hangs in distributed init on every node."
            ),
            per_host={2: replace(PROXMOX_A6000, name="multinode-stall", dist_init_hang=True)},
        ),
        replace(
            PROXMOX_A6000,
            name="multinode-version-skew",
            description=(
                "A fleet of A6000 hosts where sim-2's /opt/sglang-0.5.11/venv was left on SGLang 0.5.9 "
                "by an upgrade that missed it: the pre-launch check reports the mismatch."
            ),
            per_host={
                2: replace(
                    PROXMOX_A6000,
                    name="multinode-version-skew",
                    containers=(_SKEWED_129, PROXMOX_A6000.containers[1]),
                )
            },
        ),
    )
}

DEFAULT_SCENARIO = PROXMOX_A6000.name


def get_scenario(name: str) -> Scenario:
    """The scenario called `name`; a UserError listing the known ones otherwise."""
    try:
        return SCENARIOS[name]
    except KeyError:
        known = ", ".join(SCENARIOS)
        raise UserError(f"--scenario {name!r}: no such simulated host; choose one of {known}") from None
