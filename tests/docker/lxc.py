"""Real LXC containers for the tier that backs the sim's `pct` with them (lxc-start / lxc-attach).

Each test gets its own LXC path (`lxc-start -P DIR`), so its containers never meet anyone else's. A
container's root is a hard-linked copy of the tier's image tree; the sim's state dir, the stand-in's /opt,
sgtui's source and the host's /proc (at /hostproc) are bind-mounted in. Skips (saying why) where LXC
cannot run, and fails instead under SGTUI_REQUIRE_LXC=1.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REQUIRE_ENV = "SGTUI_REQUIRE_LXC"


def lxc_unavailable_reason() -> str | None:
    missing = [t for t in ("lxc-start", "lxc-attach", "lxc-stop", "lxc-info") if shutil.which(t) is None]
    if missing:
        return f"LXC tools missing ({', '.join(missing)}; apt-get install lxc)"
    if os.geteuid() != 0:
        return "the LXC tier needs root (privileged containers from a local rootfs)"
    return None


def require_lxc() -> None:
    reason = lxc_unavailable_reason()
    if reason is None:
        return
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{REQUIRE_ENV}=1 but the LXC tier cannot run: {reason}")
    pytest.skip(reason)


def start_lxc(lxcpath: Path, name: str, rootfs: Path, binds: list[tuple[Path, str, bool]]) -> None:
    """Start container `name` (pid 1: sleep) on a hard-linked copy of `rootfs`, with `binds` (host path,
    path inside, read-only) mounted, and the host's /proc read-only at /hostproc."""
    home = lxcpath / name
    root = home / "rootfs"
    home.mkdir(parents=True)
    subprocess.run(["cp", "-al", f"{rootfs}/.", str(root)], check=True)
    lines = [
        f"lxc.uts.name = ct{name}",
        f"lxc.rootfs.path = dir:{root}",
        "lxc.net.0.type = empty",
        "lxc.apparmor.profile = unconfined",
        "lxc.init.cmd = /bin/sleep infinity",
        "lxc.mount.auto = proc:mixed sys:ro cgroup:mixed",
        "lxc.mount.entry = /proc hostproc none rbind,ro,create=dir 0 0",
    ]
    for path, inside, ro in binds:
        opts = "bind,ro,create=dir" if ro else "bind,create=dir"
        lines.append(f"lxc.mount.entry = {path} {inside.lstrip('/')} none {opts} 0 0")
    (home / "config").write_text("\n".join(lines) + "\n")
    log = home / "lxc.log"
    started = subprocess.run(
        ["lxc-start", "-P", str(lxcpath), "-n", name, "-d", "-o", str(log), "-l", "ERROR"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if started.returncode != 0:
        text = (log.read_text(errors="replace") if log.exists() else "") + started.stderr
        message = f"lxc-start {name} failed: {text.strip()[-400:]}"
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(message)
        pytest.skip(f"LXC cannot run here: {message}")
    subprocess.run(
        ["lxc-wait", "-P", str(lxcpath), "-n", name, "-s", "RUNNING", "-t", "20"], check=True, timeout=30
    )


def init_pid(lxcpath: Path, name: str) -> int:
    out = subprocess.run(
        ["lxc-info", "-P", str(lxcpath), "-n", name, "-p", "-H"], capture_output=True, text=True, check=True
    ).stdout
    return int(out.strip())


def destroy_all(lxcpath: Path) -> None:
    for home in sorted(lxcpath.iterdir()) if lxcpath.is_dir() else []:
        subprocess.run(
            ["lxc-stop", "-P", str(lxcpath), "-n", home.name, "-k"], capture_output=True, check=False
        )
    shutil.rmtree(lxcpath, ignore_errors=True)
