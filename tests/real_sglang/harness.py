"""The real-SGLang tier's environment: SGLang 0.5.23 in a cached venv, a stub libcuda.so.1, a tiny model.

Everything is built on first use and cached in $SGTUI_REAL_SGLANG_DIR (default
~/.cache/sgtui/real-sglang-0.5.23):
    venv (bin/python, bin/sglang)      `pip install --no-deps -r requirements-0.5.23.txt` (the pinned set
                                       scripts/real_sglang_requirements.py wrote; GPU-only kernels left out)
    sgtui-installed.txt                the requirement file's sha256, written when the install finished
    stub/libcuda.so.1                  gcc-built from libcuda_stub.c: a TEST HARNESS (see that file), so
                                       the CUDA-only sglang-kernel wheel imports; on the server's
                                       LD_LIBRARY_PATH only
    models/tiny-llama/                 make_tiny_model.py: random weights, a locally trained tokenizer

When it cannot be built (no Python 3.11, no gcc, no package index, no room) the tier is skipped with the
reason, or fails when SGTUI_REQUIRE_REAL_SGLANG=1 (CI sets it, like the other tiers' SGTUI_REQUIRE_*).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest

VERSION = "0.5.23"
REQUIRE_ENV = "SGTUI_REQUIRE_REAL_SGLANG"
DIR_ENV = "SGTUI_REAL_SGLANG_DIR"
HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / f"requirements-{VERSION}.txt"
STUB_SOURCE = HERE / "libcuda_stub.c"
MODEL_SCRIPT = HERE / "make_tiny_model.py"
INSTALL_TIMEOUT_S = 1800


def env_dir() -> Path:
    given = os.environ.get(DIR_ENV)
    return Path(given) if given else Path.home() / ".cache" / "sgtui" / f"real-sglang-{VERSION}"


def unavailable(reason: str) -> NoReturn:
    """Skip with `reason` (it names the real-SGLang tier), or fail under SGTUI_REQUIRE_REAL_SGLANG=1."""
    text = f"real SGLang {VERSION} tier: {reason}"
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{REQUIRE_ENV}=1 but {text}")
    pytest.skip(text)


@dataclass(frozen=True)
class RealEnv:
    """The built environment: its python, the stub's folder and the tiny model's folder."""

    root: Path
    stub_dir: Path
    model_dir: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    def server_env(self, *, stub: bool = True, cpu_engine: bool = True) -> dict[str, str]:
        """The variables a real run gets: never the network for the hub, the CPU engine, the stub."""
        env = {"HF_HUB_OFFLINE": "1"}
        if cpu_engine:
            env["SGLANG_USE_CPU_ENGINE"] = "1"
        if stub:
            env["LD_LIBRARY_PATH"] = str(self.stub_dir)
        return env


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    """One builder at a time (two pytest sessions may start together)."""
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f".{root.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _run(argv: list[str], what: str, timeout: float, **kw: object) -> None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False, **kw)  # type: ignore[call-overload]
    except subprocess.TimeoutExpired:
        unavailable(f"{what} took longer than {timeout:.0f} s")
    except OSError as exc:
        unavailable(f"{what}: {exc}")
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        unavailable(f"{what} failed (exit {done.returncode}): {' | '.join(tail)}")


def _base_python() -> str | None:
    """A Python 3.11 to make the venv from (the requirement set is pinned for 3.11)."""
    if sys.version_info[:2] == (3, 11):
        return getattr(sys, "_base_executable", None) or sys.executable
    return shutil.which("python3.11")


def ensure_venv(root: Path) -> float | None:
    """Install the pinned set into `root` unless the marker says it is there; the seconds it took, or None."""
    marker = root / "sgtui-installed.txt"
    want = _digest(REQUIREMENTS)
    if marker.is_file() and marker.read_text().split()[:1] == [want] and (root / "bin" / "python").exists():
        return None
    if platform.system() != "Linux" or platform.machine() != "x86_64":
        unavailable(f"the pinned set is for Linux x86_64, not {platform.system()} {platform.machine()}")
    base = _base_python()
    if base is None:
        unavailable("needs Python 3.11 (the pinned requirement set is for 3.11)")
    if root.exists():
        shutil.rmtree(root)
    t0 = time.monotonic()
    _run([base, "-m", "venv", str(root)], "creating the venv", 120)
    pip = [str(root / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    _run(
        [*pip, "--no-deps", "-r", str(REQUIREMENTS)], f"pip install -r {REQUIREMENTS.name}", INSTALL_TIMEOUT_S
    )
    took = time.monotonic() - t0
    marker.write_text(f"{want}\ninstalled in {took:.0f} s\n")
    return took


def ensure_stub(root: Path) -> Path:
    """libcuda.so.1 built from libcuda_stub.c (rebuilt when the source changes)."""
    out = root / "stub"
    lib, stamp = out / "libcuda.so.1", out / "source.sha256"
    want = _digest(STUB_SOURCE)
    if lib.is_file() and stamp.is_file() and stamp.read_text().strip() == want:
        return out
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        unavailable("needs gcc to build the stub libcuda.so.1 (apt-get install gcc)")
    out.mkdir(parents=True, exist_ok=True)
    _run(
        [gcc, "-shared", "-fPIC", "-O2", "-o", str(lib), str(STUB_SOURCE)],
        "building the stub libcuda.so.1",
        120,
    )
    stamp.write_text(want + "\n")
    return out


def ensure_model(root: Path) -> Path:
    """The tiny Llama (config.json, safetensors, tokenizer) built by the environment's own python."""
    out = root / "models" / "tiny-llama"
    if (out / "config.json").is_file() and (out / "tokenizer.json").is_file():
        return out
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    _run([str(root / "bin" / "python"), str(MODEL_SCRIPT), str(tmp)], "building the tiny model", 300, env=env)
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


def build_env() -> tuple[RealEnv, float | None]:
    """The whole environment, built or found; with the install's seconds when this call installed it."""
    root = env_dir()
    if not REQUIREMENTS.is_file():
        unavailable(f"{REQUIREMENTS} is missing (scripts/real_sglang_requirements.py {VERSION} writes it)")
    with _locked(root):
        took = ensure_venv(root)
        stub = ensure_stub(root)
        model = ensure_model(root)
    return RealEnv(root, stub, model), took
