"""A minimal image for the real-Docker tier, built from this machine's own files (no registry).

The root filesystem holds bash, sh, coreutils, util-linux's setsid, procps, grep, awk and the Python that
runs the tests (its stdlib only: the sim's SGLang stand-in and fake nvidia-smi need nothing else), each
with the shared libraries `ldd` names. It is packed into a tar stream and loaded with `docker import`.
A second variant leaves bash out, for the "image without bash" path.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
from collections.abc import Iterable
from pathlib import Path

TOOLS = [
    # coreutils
    "cat",
    "chmod",
    "cp",
    "date",
    "dirname",
    "echo",
    "env",
    "false",
    "head",
    "id",
    "ln",
    "ls",
    "mkdir",
    "mv",
    "nohup",
    "printf",
    "readlink",
    "rm",
    "seq",
    "sleep",
    "stat",
    "tail",
    "test",
    "touch",
    "true",
    "base64",
    "wc",
    "df",
    "basename",
    "tr",
    "sort",
    "cut",
    "uname",
    # util-linux, procps, others
    "setsid",
    "ps",
    "kill",
    "grep",
    "awk",
    "sh",
]
_LDD_PATH = re.compile(r"(/\S+)")


def _shared_libs(paths: Iterable[str]) -> set[str]:
    libs: set[str] = set()
    for path in paths:
        out = subprocess.run(["ldd", path], capture_output=True, text=True, check=False).stdout
        for line in out.splitlines():
            if "=>" in line:
                line = line.split("=>", 1)[1]
            m = _LDD_PATH.search(line)
            if m and os.path.exists(m.group(1)):
                libs.add(m.group(1))
    return libs


def _copy(src: str, root: Path) -> None:
    """Copy src (following symlinks for the content) to the same path under root, keeping symlink names."""
    dest = root / src.lstrip("/")
    if dest.exists() or dest.is_symlink():
        return
    dest.parent.mkdir(parents=True, exist_ok=True)
    real = os.path.realpath(src)
    if real != src and os.path.islink(src):
        _copy(real, root)
        dest.symlink_to(real)
        return
    shutil.copy2(src, dest)


def python_files() -> tuple[str, list[str]]:
    """The test interpreter's real binary and every file of its stdlib (no site-packages, no tests)."""
    exe = os.path.realpath(sys.executable)
    stdlib = sysconfig.get_paths()["stdlib"]
    dynload = sysconfig.get_paths()["platstdlib"] + "/lib-dynload"
    skip = {
        "site-packages",
        "dist-packages",
        "test",
        "tests",
        "idlelib",
        "tkinter",
        "turtledemo",
        "ensurepip",
        "lib2to3",
        "__pycache__",
        "pydoc_data",
        "config-3.11-x86_64-linux-gnu",
    }
    files: list[str] = []
    for base in (stdlib, dynload):
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if d not in skip and not d.startswith("config-")]
            files += [os.path.join(dirpath, f) for f in filenames if not f.endswith((".pyc", ".a"))]
    return exe, files


def build_rootfs(root: Path) -> Path:
    """The tree of the image (bash included; `import_image(leave_out=["usr/bin/bash"])` drops it)."""
    tools = [*TOOLS, "bash"]
    found = [p for t in tools if (p := shutil.which(t, path="/usr/bin:/bin:/usr/sbin:/sbin"))]
    exe, pyfiles = python_files()
    binaries = [*found, exe, *[f for f in pyfiles if f.endswith(".so")]]
    for layout in ("bin", "lib", "lib64", "sbin"):  # merged /usr, as on Debian
        (root / "usr" / layout).mkdir(parents=True, exist_ok=True)
        if not (root / layout).exists():
            (root / layout).symlink_to(f"usr/{layout}")
    for path in [*found, exe, *pyfiles, *_shared_libs(binaries)]:
        _copy(path, root)
    py = root / "usr/bin/python3"
    if not py.exists():
        py.symlink_to(exe)
    for d in ("tmp", "var/tmp", "root", "proc", "sys", "dev", "etc", "opt", "run"):
        (root / d).mkdir(parents=True, exist_ok=True)
    (root / "tmp").chmod(0o1777)
    (root / "var/tmp").chmod(0o1777)
    (root / "etc/passwd").write_text("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534::/:/bin/sh\n")
    (root / "etc/group").write_text("root:x:0:\nnogroup:x:65534:\n")
    return root


def import_image(
    root: Path, tag: str, *, docker: str = "docker", label: str = "", leave_out: Iterable[str] = ()
) -> str:
    """`docker import` the tree as `tag` (tar streamed over stdin, without the `leave_out` paths);
    returns the image id."""
    changes = ["-c", 'CMD ["/bin/sh"]', *(["-c", f"LABEL {label}"] if label else [])]
    proc = subprocess.Popen(
        [docker, "import", *changes, "-", tag],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None
    skip = {f"./{p.lstrip('/')}" for p in leave_out}
    with tarfile.open(fileobj=proc.stdin, mode="w|") as tar:
        tar.add(root, arcname=".", filter=lambda info: None if info.name in skip else info)
    proc.stdin.close()
    assert proc.stdout is not None and proc.stderr is not None
    out, err = proc.stdout.read(), proc.stderr.read()
    proc.wait()
    if proc.returncode != 0:
        raise RuntimeError(f"docker import {tag} failed: {err.decode(errors='replace').strip()}")
    return out.decode().strip()
