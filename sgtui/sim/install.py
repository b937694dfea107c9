"""Lay out a simulated host's state dir: the state file, fake binaries, containers and their SGLang venvs.

    STATE/state.json, state.lock         GPUs, containers, who holds memory (sgtui.sim.state)
    STATE/bin/{nvidia-smi,pct,docker}    first on the host's PATH (docker: a host with no Docker
                                         containers, so the machine's own dockerd never shows up)
    STATE/root/                          the host's HOME
    STATE/containers/VMID/bin/nvidia-smi first on the container's PATH (pct exec)
    STATE/containers/VMID/root/          the container's HOME
    STATE/containers/VMID/opt/models/N   the model catalogue's config.json + index (no weights)
    STATE/containers/VMID/opt/...        the container's /opt: SGLang venvs (see sgtui.sim.pct for how
                                         /opt/sglang/venv/bin/python resolves there unchanged)

A venv's `bin/python` is a two-line shell wrapper that puts the venv's site-packages (holding a fake
`sglang` package with a dist-info of the scenario's version) on PYTHONPATH and execs this interpreter.
Every fake is run by the absolute path of the current interpreter, with sgtui's own location on sys.path.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import sgtui
from sgtui.sim.flagtable import install_parser
from sgtui.sim.pct import HOST_VIEW
from sgtui.sim.plan import MODELS_DIR
from sgtui.sim.ports import PORTS_FILE
from sgtui.sim.scenarios import Scenario, SimContainer, SimVenv
from sgtui.sim.state import StateStore

SITE_PACKAGES = "lib/python3.12/site-packages"
ADDR_ENV = "SGTUI_SIM_ADDR"
# Every simulated host shares this machine's loopback, but each has its own address (127.0.0.N): a Python
# server in one of its SGLang venvs that binds the wildcard or loopback address binds the host's own
# address instead, so two simulated hosts can both serve port 30000, and a port is reachable only at the
# address of the host that listens (what a real network does between machines).
SITECUSTOMIZE = """\
import os as _os
import socket as _socket

_ADDR = _os.environ.get("SGTUI_SIM_ADDR")
_PORTS = _os.environ.get("SGTUI_SIM_PORTS")
if _ADDR:
    _bind = _socket.socket.bind
    _OWN = ("", "0.0.0.0", "127.0.0.1", "localhost")

    def _own_port(port):
        # a port some profile asked for is the sim's own port for it (sgtui.sim.ports): a program that
        # binds the asked port (sgtui's preflight probe) meets what holds the sim's one
        try:
            import json as _json

            with open(_PORTS) as fh:
                return int(_json.load(fh).get(str(port), port))
        except (OSError, ValueError, TypeError, AttributeError):
            return port

    def _sim_bind(self, address):
        if isinstance(address, tuple) and len(address) == 2 and address[0] in _OWN:
            address = (_ADDR, _own_port(address[1]) if _PORTS and address[1] else address[1])
        return _bind(self, address)

    _socket.socket.bind = _sim_bind
"""
SGTUI_ROOT = str(Path(sgtui.__file__).resolve().parent.parent)


def host_env(state_dir: Path, speed: float, address: str = "127.0.0.1") -> dict[str, str]:
    """The environment every command on the simulated host starts with (what sshd would give root).
    `SGTUI_SIM_ADDR` is the host's own address: Python servers in its SGLang venvs bind there."""
    return {
        "PATH": f"{state_dir / 'bin'}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": str(state_dir / "root"),
        "USER": "root",
        "LOGNAME": "root",
        "SHELL": "/bin/bash",
        "LANG": "C.UTF-8",
        "SGTUI_SIM_SPEED": f"{speed:g}",
        "PYTHONDONTWRITEBYTECODE": "1",
        ADDR_ENV: address,
        "SGTUI_SIM_PORTS": str(state_dir / PORTS_FILE),
    }


def initial_state(scenario: Scenario, speed: float, address: str = "127.0.0.1") -> dict[str, Any]:
    return {
        "scenario": scenario.name,
        "hostname": scenario.hostname,
        "address": address,
        "dist_init_hang": scenario.dist_init_hang,
        "speed": speed,
        "ignore_term": scenario.ignore_term,
        "release_delay_s": scenario.release_delay_s,
        "gpus": [
            {
                "index": i,
                "name": gpu.name,
                "total_mib": gpu.total_mib,
                "uuid": f"GPU-5a1e{i:04x}-7c3b-4f2e-9d61-0b8e4c{i:06x}",
                "bus_id": f"00000000:{0x41 + 0x20 * i:02X}:00.0",
            }
            for i, gpu in enumerate(scenario.gpus)
        ],
        "containers": {
            str(ct.vmid): {
                "name": ct.name,
                "running": ct.running,
                "gpus": list(ct.gpus),
                "venvs": [{"path": v.path, "version": v.version} for v in ct.venvs],
            }
            for ct in scenario.containers
        },
        "procs": [
            {
                "pid": p.pid,
                "start": None,
                "gpu": p.gpu,
                "mib": p.mib,
                "name": p.name,
                "user": p.user,
                "util": 35,
                "static": True,
                "exited_at": None,
                "release_delay": 0.0,
            }
            for p in scenario.foreign
        ],
        "servers": [],
    }


def _script(path: Path, body: str, shebang: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!{shebang}\n{body}", encoding="utf-8")
    path.chmod(0o755)


def _python_fake(path: Path, module: str, state_dir: Path) -> None:
    """A fake command: this interpreter (-S: stdlib only, quick to start) running sgtui.sim.<module>.run."""
    body = (
        "import sys\n"
        f"sys.path.insert(0, {SGTUI_ROOT!r})\n"
        f"from sgtui.sim.{module} import run\n"
        f"sys.exit(run({str(state_dir)!r}, sys.argv[1:]))\n"
    )
    _script(path, body, f"{sys.executable} -S")


def install_venv(root: Path, venv: SimVenv, state_dir: Path) -> None:
    """`venv.path` under the container root: a python wrapper and a fake sglang package of that version."""
    base = root / venv.path.lstrip("/")
    wrapper = (
        'v="${0%/bin/*}"\n'
        f'SGTUI_SIM_VENV="$v" PYTHONPATH="$v/{SITE_PACKAGES}${{PYTHONPATH:+:$PYTHONPATH}}" '
        f'exec {shlex.quote(sys.executable)} "$@"\n'
    )
    _script(base / "bin" / "python", wrapper, "/bin/sh")
    site = base / SITE_PACKAGES
    pkg = site / "sglang"
    pkg.mkdir(parents=True, exist_ok=True)
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    (pkg / "__init__.py").write_text(f'__version__ = "{venv.version}"\n')
    (pkg / "version.py").write_text(f'__version__ = "{venv.version}"\n')
    (pkg / "launch_server.py").write_text(
        '"""Launch the inference server (the sgtui simulated host\'s stand-in)."""\n\n'
        "import sys\n\n"
        f"sys.path.insert(0, {SGTUI_ROOT!r})\n"
        "from sgtui.sim.standin import main\n\n"
        'if __name__ == "__main__":\n'
        f"    raise SystemExit(main(sys.argv[1:], {str(state_dir)!r}))\n"
    )
    install_parser(pkg, venv.version)
    dist = site / f"sglang-{venv.version}.dist-info"
    dist.mkdir(exist_ok=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: sglang\nVersion: {venv.version}\n")
    (dist / "INSTALLER").write_text("pip\n")
    (dist / "RECORD").write_text("")


def install_container(state_dir: Path, ct: SimContainer) -> None:
    root = state_dir / "containers" / str(ct.vmid)
    (root / "root").mkdir(parents=True, exist_ok=True)
    _python_fake(root / "bin" / "nvidia-smi", "nvidia_smi", state_dir)
    for venv in ct.venvs:
        install_venv(root, venv, state_dir)
    # The built-in model catalogue (configs and safetensors indexes, no weights) at /opt/models/NAME, so
    # sgtui reads a model's config.json inside the container as it would on a real host.
    if ct.venvs:
        for model in sorted(MODELS_DIR.iterdir()) if MODELS_DIR.is_dir() else ():
            if (model / "config.json").is_file():
                shutil.copytree(model, root / "opt" / "models" / model.name, dirs_exist_ok=True)
    # Each overlaid top dir (/opt) keeps the host's other entries reachable through symlinks.
    for top in sorted({Path(v.path).parts[1] for v in ct.venvs}):
        (root / HOST_VIEW / top).mkdir(parents=True, exist_ok=True)
        own = root / top
        host_dir = Path("/") / top
        for entry in sorted(os.listdir(host_dir)) if host_dir.is_dir() else []:
            link = own / entry
            if not link.exists() and not link.is_symlink():
                link.symlink_to(root / HOST_VIEW / top / entry)


# The simulated host runs its commands on this machine; without this, `docker ps` there would list this
# machine's real containers (the real-Docker test tier's, say) as the simulated host's.
FAKE_DOCKER = """\
case "$1" in
  ps) exit 0 ;;
  inspect) echo '[]'; exit 0 ;;
  *) echo "Error response from daemon: No such container: ${2:-}" >&2; exit 1 ;;
esac
"""


def install(
    scenario: Scenario, state_dir: Path, speed: float = 1.0, address: str = "127.0.0.1"
) -> StateStore:
    """Create the whole state dir for `scenario`; returns its state store."""
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / "root").mkdir(exist_ok=True)
    store = StateStore(state_dir)
    store.create(initial_state(scenario, speed, address))
    _python_fake(state_dir / "bin" / "nvidia-smi", "nvidia_smi", state_dir)
    _python_fake(state_dir / "bin" / "pct", "pct", state_dir)
    _script(state_dir / "bin" / "docker", FAKE_DOCKER, "/bin/sh")
    for ct in scenario.containers:
        install_container(state_dir, ct)
    return store
