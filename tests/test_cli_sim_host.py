"""`sgtui sim-host`: a standalone simulated GPU host that sgtui reaches like any other host."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
import yaml

from sgtui.core.profiles import load_profile
from tests.sim.simhost_process import free_port, running_sim_host, sgtui


def test_sim_host_registers_itself_in_the_config_dir_and_stops_on_sigterm(tmp_path: Path) -> None:
    with running_sim_host(tmp_path) as host:
        assert f"listening on 127.0.0.1:{host.port}" in host.banner
        entry = yaml.safe_load((tmp_path / "hosts.yaml").read_text())["sim"]
        assert (entry["hostname"], entry["port"], entry["user"]) == ("127.0.0.1", host.port, "root")
        key = Path(entry["identity_file"])
        assert stat.S_IMODE(key.stat().st_mode) == 0o600
        assert (tmp_path / "known_hosts").read_text().startswith(f"[127.0.0.1]:{host.port} ssh-ed25519 ")
        profile = load_profile(tmp_path / "profiles" / "qwen36-27b-2xa6000.yaml")
        assert (profile.host, profile.python) == ("sim", "/opt/sglang/venv/bin/python")
        assert host.stop() == 0
    assert host.proc.returncode == 0


async def test_sgtui_reaches_the_sim_host_through_its_own_hosts_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sgtui.remote.connection import Connection
    from sgtui.remote.hosts import load_hosts

    with running_sim_host(tmp_path):
        monkeypatch.setenv("SGTUI_CONFIG_DIR", str(tmp_path))
        hosts = load_hosts(ssh_config=False)
        conn = Connection(hosts["sim"], agent_path=None, user_known_hosts=None)
        try:
            listing = await conn.run("pct list", timeout=20)
            gpus = await conn.run("nvidia-smi --query-gpu=name --format=csv,noheader", timeout=20)
        finally:
            await conn.close()
    assert listing.rc == 0 and "129" in listing.stdout and "sglang" in listing.stdout
    assert gpus.stdout.splitlines() == ["NVIDIA RTX A6000", "NVIDIA RTX A6000"]


def test_an_unknown_scenario_is_refused_with_the_known_names(tmp_path: Path) -> None:
    result = sgtui("sim-host", "--config-dir", str(tmp_path), "--scenario", "nope")
    assert result.returncode == 2
    assert "--scenario 'nope'" in result.stderr and "proxmox-a6000" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_port_already_taken_is_refused_without_a_traceback(tmp_path: Path) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", free_port()))
        busy.listen(1)
        port = busy.getsockname()[1]
        result = sgtui("sim-host", "--port", str(port), "--config-dir", str(tmp_path))
    assert result.returncode == 2
    assert f"--port {port}" in result.stderr and "Traceback" not in result.stderr


def test_list_scenarios_names_and_describes_each_one() -> None:
    from sgtui.sim.scenarios import SCENARIOS

    result = sgtui("sim-host", "--list-scenarios")
    assert result.returncode == 0
    names = [line for line in result.stdout.splitlines() if not line.startswith(" ")]
    assert names == list(SCENARIOS)
