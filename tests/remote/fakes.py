"""Fake host tools for the remote tests: pct, docker, nvidia-smi and an SGLang launcher stand-in.

The fake `pct` follows what the real one does to its arguments (source: pve-container/pve-common): it
resets PATH to the minimal system PATH, keeps the environment, and passes argv on without a shell.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

PY = sys.executable


def _write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text).lstrip())
    path.chmod(0o755)
    return path


def install_fake_pct(bin_dir: Path, container_path: str) -> Path:
    """`pct exec VMID -- argv...` runs argv with PATH=container_path (pct's PATH reset) and container=lxc.
    `pct list` / `pct config VMID` print the files FAKE_PCT_DIR/list and FAKE_PCT_DIR/VMID.conf."""
    return _write(
        bin_dir / "pct",
        f"""
        #!{PY}
        import os, sys
        args = sys.argv[1:]
        state = os.environ.get("FAKE_PCT_DIR", "")
        if args[:1] == ["list"]:
            sys.stdout.write(open(os.path.join(state, "list")).read()); sys.exit(0)
        if args[:1] == ["config"] and len(args) == 2:
            sys.stdout.write(open(os.path.join(state, args[1] + ".conf")).read()); sys.exit(0)
        if len(args) < 3 or args[0] != "exec" or not args[1].isdigit():
            sys.exit("fake pct: usage: pct exec VMID -- argv")
        rest = args[2:]
        if rest[0] == "--":
            rest = rest[1:]
        if os.environ.get("FAKE_PCT_C_LOCALE") == "1":
            rest = [a.encode("utf-8", "surrogateescape").decode("ascii", "replace") for a in rest]
        env = dict(os.environ, PATH={container_path!r}, container="lxc")
        os.execvpe(rest[0], rest, env)
        """,
    )


def install_fake_docker(bin_dir: Path) -> Path:
    """`docker exec [-i] NAME argv...` runs argv; `docker ps --format ...` prints FAKE_DOCKER_PS,
    `docker ps -q` FAKE_DOCKER_IDS and `docker inspect` FAKE_DOCKER_INSPECT."""
    return _write(
        bin_dir / "docker",
        f"""
        #!{PY}
        import os, sys
        args = sys.argv[1:]
        if args[:2] == ["ps", "-q"]:
            sys.stdout.write(os.environ.get("FAKE_DOCKER_IDS", "")); sys.exit(0)
        if args[:1] == ["ps"]:
            sys.stdout.write(os.environ.get("FAKE_DOCKER_PS", "")); sys.exit(0)
        if args[:1] == ["inspect"]:
            sys.stdout.write(os.environ.get("FAKE_DOCKER_INSPECT", "")); sys.exit(0)
        if args[:1] != ["exec"]:
            sys.exit("fake docker: only exec, ps and inspect")
        rest = args[1:]
        if rest[0] == "-i":
            rest = rest[1:]
        os.execvp(rest[1], rest[1:])
        """,
    )


def install_argv_printer(bin_dir: Path, name: str = "python") -> Path:
    """A launcher stand-in that prints its argv and SGT_* environment as one JSON line."""
    return _write(
        bin_dir / name,
        f"""
        #!{PY}
        import json, os, sys
        env = {{k: v for k, v in os.environ.items() if k.startswith("SGT_")}}
        print("ARGV " + json.dumps({{"argv": sys.argv[1:], "env": env, "path": os.environ.get("PATH")}}))
        """,
    )


def install_fake_nvidia_smi(bin_dir: Path, state_dir: Path) -> Path:
    """A bash nvidia-smi: --query-gpu prints STATE/gpus.csv (looping with -lms), --query-compute-apps
    prints STATE/apps.csv; an empty STATE/fail makes it fail like a missing driver, a non-empty one prints
    that text and fails."""
    return _write(
        bin_dir / "nvidia-smi",
        f"""
        #!/bin/bash
        state={state_dir}
        if [ -s "$state/fail" ]; then cat "$state/fail"; exit 9; fi
        if [ -e "$state/fail" ]; then
          echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."; exit 9
        fi
        ms=""; what=""
        for a in "$@"; do
          case $a in
            --query-gpu=index,uuid) what=uuids;;
            --query-gpu=*) what=gpus;;
            --query-compute-apps=*) what=apps;;
          esac
        done
        prev=""; for a in "$@"; do [ "$prev" = -lms ] && ms=$a; prev=$a; done
        if [ "$what" = uuids ]; then cut -d, -f1,2 "$state/gpus.csv"; exit 0; fi
        if [ "$what" = apps ]; then cat "$state/apps.csv" 2>/dev/null; exit 0; fi
        if [ -z "$ms" ]; then cat "$state/gpus.csv"; exit 0; fi
        while :; do cat "$state/gpus.csv" || exit 1; sleep "$(awk "BEGIN{{print $ms/1000}}")"; done
        """,
    )


def fake_gpu_host(
    bin_dir: Path,
    state_dir: Path,
    *,
    gpus: str | None = None,
    apps: str | None = None,
    fail: str | None = None,
) -> Path:
    """The fake nvidia-smi reading `state_dir`, with whichever of its files a test gives; returns the
    folder so the test can change the readings later."""
    state_dir.mkdir()
    install_fake_nvidia_smi(bin_dir, state_dir)
    for name, text in (("gpus.csv", gpus), ("apps.csv", apps), ("fail", fail)):
        if text is not None:
            (state_dir / name).write_text(text)
    return state_dir


def gpu_rows(n: int, used: int = 1000, total: int = 49140) -> str:
    return "".join(f"{i}, GPU-{i:04d}, NVIDIA RTX A6000, {used}, {total}, {i * 3}\n" for i in range(n))
