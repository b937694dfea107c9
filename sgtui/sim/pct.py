"""The simulated host's `pct`: `list`, `config VMID`, `status VMID` and `exec VMID -- argv...`.

`pct exec` behaves like the real one (pve-container: lxc-attach with keep-env): no shell, argv passed
through as is, the environment kept except PATH, which the PVE CLI resets to the minimal system PATH
(here with the container's own bin dir first, where its nvidia-smi lives), plus `container=lxc`.

A container has its own filesystem, so an SGLang install at `/opt/sglang/venv` exists only inside it. The
sim gives each container a directory under the state dir (`containers/VMID/`) and makes its top-level
install dirs (`/opt`) visible at their real paths in a private mount namespace: the host's `/opt` is
bind-mounted aside, the container's `opt/` is bind-mounted over `/opt`, and symlinks in it lead back to
the host's own entries. As root that needs only CLONE_NEWNS; otherwise an unprivileged user namespace.
Where namespaces are not allowed (or SGTUI_SIM_NO_NAMESPACE=1), pct rewrites the container paths in argv
instead, including inside the base64 script sgtui sends, which covers what sgtui itself runs.
"""

from __future__ import annotations

import base64
import ctypes
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sgtui.sim.state import HOST_PROC_ENV, StateStore

CONTAINER_PATH = "/sbin:/bin:/usr/sbin:/usr/bin"
NO_NAMESPACE_ENV = "SGTUI_SIM_NO_NAMESPACE"
# When set, `pct exec VMID` enters the real LXC container named VMID (lxc-attach), as Proxmox's pct does,
# so namespaces and cgroups (/lxc.payload.VMID) are real; the test tier sets it where LXC runs.
REAL_LXC_ENV = "SGTUI_SIM_REAL_LXC"
LXC_PATH_ENV = "SGTUI_SIM_LXC_PATH"  # the LXC path (lxc-attach -P) those containers live in
HOST_VIEW = ".host"  # where a container's mount namespace keeps the host's own copy of an overlaid dir

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_MS_BIND = 4096
_MS_REC = 16384
_MS_PRIVATE = 1 << 18
_B64_SCRIPT = re.compile(r"echo ([A-Za-z0-9+/=]+) \| base64 -d")


class PctError(Exception):
    """What the real pct dies with (exit 255)."""


def container_root(state_dir: Path, vmid: str) -> Path:
    return state_dir / "containers" / vmid


def overlay_dirs(container: dict[str, Any]) -> list[str]:
    """Top-level host directories the container's installs live under (`/opt` for /opt/sglang/venv)."""
    tops = {"/" + Path(v["path"]).parts[1] for v in container.get("venvs", [])}
    return sorted(tops)


def _list(state: dict[str, Any]) -> str:
    lines = [f"{'VMID':<10} {'Status':<10} {'Lock':<12} {'Name':<20}"]
    for vmid, ct in sorted(state["containers"].items(), key=lambda kv: int(kv[0])):
        status = "running" if ct["running"] else "stopped"
        lines.append(f"{vmid:<10} {status:<10} {'':<12} {ct['name']:<20}")
    return "".join(line.rstrip() + "\n" for line in lines)


def _config(vmid: str, ct: dict[str, Any]) -> str:
    lines = [
        "arch: amd64",
        "cores: 16",
        "features: nesting=1",
        f"hostname: {ct['name']}",
        "memory: 131072",
        f"net0: name=eth0,bridge=vmbr0,firewall=1,hwaddr=BC:24:11:4A:{int(vmid) % 100:02d}:29,"
        "ip=dhcp,type=veth",
        "ostype: debian",
        f"rootfs: local-lvm:vm-{vmid}-disk-0,size=200G",
        "swap: 0",
        "unprivileged: 1",
    ]
    devices = [f"/dev/nvidia{i}" for i in ct["gpus"]]
    if devices:
        devices += ["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"]
    lines += [f"dev{n}: {path},mode=0666" for n, path in enumerate(devices)]
    lines.sort()
    return "".join(line + "\n" for line in lines)


def _container(state: dict[str, Any], vmid: str) -> dict[str, Any]:
    if not vmid.isdigit():
        raise PctError(
            f"400 Parameter verification failed.\nvmid: type check ('integer') failed - got '{vmid}'"
        )
    ct = state["containers"].get(str(int(vmid)))
    if ct is None:
        raise PctError(f"Configuration file 'nodes/{state['hostname']}/lxc/{int(vmid)}.conf' does not exist")
    return ct


def _enter_namespace(root: Path, tops: list[str]) -> bool:
    """Give this process a private mount namespace where the container's dirs sit at their real paths."""
    if os.environ.get(NO_NAMESPACE_ENV) == "1" or not all(Path(t).is_dir() for t in tops):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(_CLONE_NEWNS | (0 if uid == 0 else _CLONE_NEWUSER)) != 0:
        return False
    try:
        if uid != 0:
            Path("/proc/self/setgroups").write_text("deny")
            Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
            Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
    except OSError:
        return False
    if libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
        return False
    for top in tops:
        name = top.strip("/")
        aside = root / HOST_VIEW / name
        if libc.mount(top.encode(), str(aside).encode(), None, _MS_BIND | _MS_REC, None) != 0:
            return False
        if libc.mount(str(root / name).encode(), top.encode(), None, _MS_BIND | _MS_REC, None) != 0:
            return False
    return True


def rewrite_paths(argv: Sequence[str], root: Path, tops: list[str]) -> list[str]:
    """Without a mount namespace: point container paths (also inside sgtui's base64 script) at its dir."""

    def fix(text: str) -> str:
        for top in tops:
            text = re.sub(rf"(?<![\w/.-]){re.escape(top)}(?=/)", str(root) + top, text)
        return text

    def fix_b64(match: re.Match[str]) -> str:
        try:
            script = base64.b64decode(match.group(1)).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return match.group(0)
        return f"echo {base64.b64encode(fix(script).encode()).decode()} | base64 -d"

    return [fix(_B64_SCRIPT.sub(fix_b64, arg)) for arg in argv]


def _exec(state_dir: Path, state: dict[str, Any], vmid: str, argv: list[str]) -> int:
    ct = _container(state, vmid)
    vmid = str(int(vmid))
    if not ct["running"]:
        raise PctError(f"CT {vmid} not running")
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        raise PctError("missing command")
    if os.environ.get(REAL_LXC_ENV) == "1":
        return _exec_lxc(vmid, argv)
    root = container_root(state_dir, vmid)
    env = dict(os.environ)
    env.update(
        PATH=f"{root / 'bin'}:{CONTAINER_PATH}",
        container="lxc",
        HOME=str(root / "root"),
        SGTUI_SIM_CONTAINER=vmid,
    )
    tops = overlay_dirs(ct)
    if tops and not _enter_namespace(root, tops):
        argv = rewrite_paths(argv, root, tops)
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as exc:
        print(
            f'lxc-attach: {vmid}: attach.c: lxc_attach_run_command: Failed to exec "{argv[0]}": {exc}',
            file=sys.stderr,
        )
        return 255
    return 0  # not reached: exec replaced this process


def _exec_lxc(vmid: str, argv: list[str]) -> int:
    """`lxc-attach -n VMID` keeping the environment but PATH (what pve-container's `pct exec` runs). The
    container sees the host's /proc at /hostproc (its config mounts it), so the sim records host pids."""
    lxcpath = os.environ.get(LXC_PATH_ENV)
    words = ["lxc-attach", *(["-P", lxcpath] if lxcpath else []), "-n", vmid, "--keep-env"]
    words += ["--set-var", f"PATH=/opt/sim-bin:{CONTAINER_PATH}"]
    for var in ("container=lxc", f"SGTUI_SIM_CONTAINER={vmid}", f"{HOST_PROC_ENV}=/hostproc"):
        words += ["--set-var", var]
    words += ["--", *argv]
    try:
        os.execvp(words[0], words)
    except OSError as exc:
        print(f"pct: cannot run lxc-attach: {exc}", file=sys.stderr)
        return 255
    return 0  # not reached


USAGE = (
    "USAGE: pct <COMMAND> [ARGS] [OPTIONS]\n       pct list\n       pct config <vmid>\n"
    "       pct status <vmid>\n       pct exec <vmid> [<extra-args>]\n"
)


def run(state_dir: str | Path, argv: Sequence[str]) -> int:
    state_dir = Path(state_dir)
    args = list(argv)
    try:
        state = StateStore(state_dir).read()
        if not args:
            sys.stderr.write("ERROR: no command specified\n" + USAGE)
            return 255
        cmd, rest = args[0], args[1:]
        if cmd == "list":
            sys.stdout.write(_list(state))
            return 0
        if cmd in ("config", "status") and rest:
            ct = _container(state, rest[0])
            if cmd == "config":
                sys.stdout.write(_config(str(int(rest[0])), ct))
            else:
                sys.stdout.write(f"status: {'running' if ct['running'] else 'stopped'}\n")
            return 0
        if cmd == "exec" and rest:
            return _exec(state_dir, state, rest[0], rest[1:])
        if cmd in ("config", "status", "exec"):
            raise PctError(f"400 not enough arguments\npct {cmd} <vmid>")
        sys.stderr.write(f"ERROR: unknown command 'pct {cmd}'\n" + USAGE)
        return 255
    except PctError as exc:
        print(exc, file=sys.stderr)
        return 255
