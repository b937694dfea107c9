"""The fake pct: list and config in Proxmox's shapes, exec without a shell and with PVE's PATH reset, and the
container's own /opt where the SGLang venv lives."""

from __future__ import annotations

import base64
import json
import shlex
import subprocess
from pathlib import Path

import pytest

from sgtui.sim.install import host_env, install
from sgtui.sim.scenarios import get_scenario


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    install(get_scenario("proxmox-a6000"), tmp_path, speed=1.0)
    return tmp_path


def sh(state_dir: Path, command: str, **extra_env: str) -> subprocess.CompletedProcess[str]:
    """Run a command the way the simulated sshd does: bash -c with the host's environment."""
    env = {**host_env(state_dir, 1.0), **extra_env}
    return subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=env, timeout=30)


def in_container_129(state_dir: Path, script: str, **extra_env: str) -> subprocess.CompletedProcess[str]:
    """`script` run by a plain bash inside CT 129, base64-encoded so that no quoting layer can alter it."""
    encoded = base64.b64encode(script.encode()).decode()
    wrapped = f'eval "$(echo {encoded} | base64 -d)"'
    return sh(
        state_dir,
        shlex.join(["pct", "exec", "129", "--", "bash", "--norc", "--noprofile", "-c", wrapped]),
        **extra_env,
    )


def test_pct_list_prints_the_containers_in_proxmox_columns(state_dir: Path) -> None:
    out = sh(state_dir, "pct list").stdout.splitlines()
    assert out[0].split() == ["VMID", "Status", "Lock", "Name"]
    assert out[1].split() == ["129", "running", "sglang"]
    assert out[2].split() == ["130", "stopped", "scratch"]


def test_pct_config_lists_the_gpu_device_lines_of_the_container(state_dir: Path) -> None:
    out = sh(state_dir, "pct config 129").stdout
    assert "dev0: /dev/nvidia0,mode=0666" in out and "dev1: /dev/nvidia1,mode=0666" in out
    assert "hostname: sglang" in out
    assert "nvidia" not in sh(state_dir, "pct config 130").stdout


def test_pct_exec_resets_path_keeps_the_environment_and_marks_the_container(state_dir: Path) -> None:
    script = 'printf "%s\\n" "$PATH" "$container" "$KEEP_ME" "$SGTUI_SIM_CONTAINER"'
    out = sh(state_dir, f"pct exec 129 -- bash --norc --noprofile -c {shlex.quote(script)}", KEEP_ME="kept")
    path, container, kept, vmid = out.stdout.splitlines()
    assert path.endswith(":/sbin:/bin:/usr/sbin:/usr/bin") and "/containers/129/bin" in path
    assert str(state_dir / "bin") not in path.split(":")
    assert (container, kept, vmid) == ("lxc", "kept", "129")


def test_pct_exec_passes_argv_through_without_a_shell(state_dir: Path) -> None:
    tricky = ["$(touch PWNED)", "a b", "'quoted'", "*", "; echo no"]
    code = "import json, sys; print(json.dumps(sys.argv[1:]))"
    python = "/opt/sglang/venv/bin/python"
    out = sh(state_dir, shlex.join(["pct", "exec", "129", "--", python, "-c", code, *tricky]))
    assert json.loads(out.stdout) == tricky
    assert not (state_dir / "root" / "PWNED").exists()


@pytest.mark.parametrize("namespace", ["mount namespace", "path rewrite"])
def test_the_container_venv_python_answers_at_its_absolute_path(state_dir: Path, namespace: str) -> None:
    extra = {"SGTUI_SIM_NO_NAMESPACE": "1"} if namespace == "path rewrite" else {}
    script = "/opt/sglang/venv/bin/python -c 'import importlib.metadata as m; print(m.version(\"sglang\"))'"
    out = in_container_129(state_dir, script, **extra)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0.5.9"
    newer = sh(
        state_dir,
        "pct exec 129 -- /opt/sglang-0.5.11/venv/bin/python -c 'import sglang; print(sglang.__version__)'",
        **extra,
    )
    assert newer.stdout.strip() == "0.5.11"
    dotted = sh(
        state_dir,
        "pct exec 129 -- /opt/sglang/.venv/bin/python -c 'import sglang; print(sglang.__version__)'",
        **extra,
    )
    assert dotted.stdout.strip() == "0.5.9"  # the path profiles/qwen36-27b-2xa6000.yaml names


def test_the_host_itself_has_no_sglang_venv(state_dir: Path) -> None:
    if Path("/opt/sglang/venv/bin/python").exists():
        pytest.skip("this machine has a real /opt/sglang/venv, so the host check cannot tell")
    out = sh(state_dir, "test -x /opt/sglang/venv/bin/python && echo yes || echo no")
    assert out.stdout.strip() == "no"


def test_pct_refuses_stopped_and_unknown_containers_with_exit_255(state_dir: Path) -> None:
    stopped = sh(state_dir, "pct exec 130 -- true")
    assert (stopped.returncode, stopped.stderr.strip()) == (255, "CT 130 not running")
    unknown = sh(state_dir, "pct exec 999 -- true")
    assert unknown.returncode == 255
    assert "Configuration file 'nodes/sim/lxc/999.conf' does not exist" in unknown.stderr
    assert sh(state_dir, "pct frobnicate").returncode == 255


def test_sgtuis_container_discovery_reads_the_fake_pct_output(state_dir: Path) -> None:
    from sgtui.remote.targets import parse_pct_config_gpus, parse_pct_list

    assert parse_pct_list(sh(state_dir, "pct list").stdout) == [
        ("129", "running", "sglang"),
        ("130", "stopped", "scratch"),
    ]
    assert parse_pct_config_gpus(sh(state_dir, "pct config 129").stdout) == ((0, 1), False)


@pytest.mark.parametrize("namespace", ["mount namespace", "path rewrite"])
def test_the_containers_model_folder_holds_the_config_sgtui_reads_for_the_fit(
    state_dir: Path, namespace: str
) -> None:
    extra = {"SGTUI_SIM_NO_NAMESPACE": "1"} if namespace == "path rewrite" else {}
    script = "cat /opt/models/Qwen3.6-27B/config.json"
    out = in_container_129(state_dir, script, **extra)
    assert out.returncode == 0, out.stderr
    assert "Qwen3_5ForConditionalGeneration" in out.stdout


def test_the_simulated_host_has_no_docker_containers_whatever_this_machine_runs(state_dir: Path) -> None:
    """The sim runs its commands on this machine: its `docker` must be its own (no containers), so the
    real-Docker tier's containers, or the developer's, never show up as the simulated host's."""
    out = sh(state_dir, "command -v docker; docker ps --format '{{.Names}}'; docker ps -q; docker inspect x")
    assert out.stdout.splitlines() == [str(state_dir / "bin" / "docker"), "[]"]
    assert sh(state_dir, "docker exec web true").returncode == 1
