"""Multi-node launches end to end: `sgtui sim-host --hosts 2` and the `multinode-demo` profile it writes.

The SGLang stand-in's nodes really meet at --dist-init-addr over TCP (sgtui.sim.rendezvous), each host on
its own loopback address, so these are the flows a user runs against two real GPU hosts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.sim.simhost_process import free_port, running_sim_host, sgtui

pytestmark = pytest.mark.skipif(
    not __import__("sgtui.sim.fleet", fromlist=["x"]).loopback_aliases_work(),
    reason="needs 127.0.0.2 (Linux routes all of 127/8 to loopback; elsewhere add an alias)",
)


def events(stdout: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def test_launch_watch_is_ready_once_both_nodes_are_then_stop_stops_both(tmp_path: Path) -> None:
    with running_sim_host(tmp_path, "--hosts", "2") as sims:
        profile = sims.profile("multinode-demo.yaml", server_port=free_port())
        launched = sgtui("launch", str(profile), "--watch", "--json-events", config_dir=tmp_path, timeout=120)
        assert launched.returncode == 0, launched.stdout + launched.stderr
        got = events(launched.stdout)
        runs = [e["run"] for e in got if e["event"] == "launched"]
        assert [(r["host"], r["node_rank"]) for r in runs] == [("sim", 0), ("sim-2", 1)]  # type: ignore[index]
        assert len({r["id"] for r in runs}) == 1  # type: ignore[index]
        for rank, run in enumerate(runs):
            argv = run["argv"]  # type: ignore[index]
            assert argv[argv.index("--node-rank") + 1] == str(rank)
            assert argv[argv.index("--nnodes") + 1] == "2"
            assert argv[argv.index("--dist-init-addr") + 1].startswith("127.0.0.1:")
        assert got[-1]["event"] == "ready"
        # both nodes' logs show they met: weights loaded on the TP ranks of each node
        milestones = [(e["node_rank"], e["rank"]) for e in got if e.get("kind") == "load_weight_begin"]
        assert sorted(milestones) == [(0, "TP0"), (1, "TP2")]

        run_id = str(runs[0]["id"])  # type: ignore[index]
        listed = sgtui("runs", "--profile", str(profile), "--json", config_dir=tmp_path)
        rows = [r for r in json.loads(listed.stdout) if r["id"] == run_id]
        assert [(r["node_rank"], r["state"]) for r in rows] == [(0, "running"), (1, "running")]

        stopped = sgtui(
            "stop", run_id, "--profile", str(profile), "--yes", "--grace", "5", config_dir=tmp_path
        )
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
        lines = stopped.stdout.splitlines()
        assert lines.index(
            next(ln for ln in lines if ln.startswith("node 1 (sim-2): stopped"))
        ) < lines.index(
            next(ln for ln in lines if ln.startswith("node 0 (sim): stopped"))
        )  # workers first, node 0 last
        after = sgtui("runs", "--profile", str(profile), "--json", config_dir=tmp_path)
        rows = [r for r in json.loads(after.stdout) if r["id"] == run_id]
        assert sorted(r["node_rank"] for r in rows) == [0, 1]
        assert all(r["state"] != "running" for r in rows)


def test_a_node_that_never_joins_distributed_init_is_named_as_stalled(tmp_path: Path) -> None:
    with running_sim_host(tmp_path, "--hosts", "2", "--scenario", "multinode-stall") as sims:
        profile = sims.profile("multinode-demo.yaml", server_port=free_port())
        result = sgtui(
            "launch",
            str(profile),
            "--watch",
            "--stall-after",
            "3",
            "--json-events",
            config_dir=tmp_path,
            timeout=120,
        )
        assert result.returncode == 1, result.stdout + result.stderr
        got = events(result.stdout)
        stalled = next(e for e in got if e["event"] == "stalled")
        assert stalled["phase"] == "distributed_init"
        assert [(n["host"], n["node_rank"], n["ranks"]) for n in stalled["nodes"]] == [  # type: ignore[union-attr]
            ("sim-2", 1, ["TP2", "TP3"])
        ]
        # no node got past init: the logs alone could not tell, node 0's store did
        assert not any(e.get("kind") == "load_weight_begin" for e in got)
        stop = sgtui("runs", "--profile", str(profile), "--json", config_dir=tmp_path)
        run_id = next(e["run"]["id"] for e in got if e["event"] == "launched")  # type: ignore[index]
        sgtui("stop", str(run_id), "--profile", str(profile), "--yes", "--grace", "2", config_dir=tmp_path)
        assert stop.returncode == 0


def test_pre_launch_checks_name_the_node_with_another_sglang_version(tmp_path: Path) -> None:
    with running_sim_host(tmp_path, "--hosts", "2", "--scenario", "multinode-version-skew") as sims:
        profile = sims.profile("multinode-demo.yaml", server_port=free_port())
        result = sgtui("launch", str(profile), "--watch", config_dir=tmp_path, timeout=120)
        assert result.returncode == 3  # predicted to fail: nothing launched
        checks = [ln for ln in result.stdout.splitlines() if "nodes: FAILED: " in ln]
        assert len(checks) == 1, result.stdout
        assert "node 1 (sim-2 pct 129): SGLang 0.5.9, but node 0 has 0.5.11" in checks[0]
        assert "launched multinode-demo" not in result.stdout  # nothing was started


def test_pre_launch_checks_name_each_node_that_cannot_reach_the_dist_init_port(tmp_path: Path) -> None:
    with running_sim_host(tmp_path, "--hosts", "3"):
        text = (tmp_path / "profiles" / "multinode-demo.yaml").read_text()
        three = text.replace("python:", "  - host: sim-3\n    target: {kind: pct, id: 129}\npython:").replace(
            "tp-size: 4", "tp-size: 6"
        )
        port = free_port()
        wrong = three.replace("python:", f"dist_init_addr: 127.0.0.9:{port}\npython:", 1)
        profile = tmp_path / "profiles" / "three.yaml"
        profile.write_text(wrong.replace("port: 30000", f"port: {free_port()}"))
        result = sgtui("launch", str(profile), "--json-events", config_dir=tmp_path, timeout=120)
        assert result.returncode == 3
        got = events(result.stdout)
        assert got[0]["event"] == "preflight" and got[-1]["event"] == "not_launched"
        nodes = [c for c in got[0]["checks"] if c["name"] == "nodes"]  # type: ignore[union-attr]
        assert len(nodes) == 2 and not any(c["ok"] for c in nodes)
        failed = [e for e in got if e["event"] == "check_failed"]
        assert [(e["node_rank"], e["host"]) for e in failed] == [(1, "sim-2"), (2, "sim-3")]
        for e in failed:
            message = str(e["message"])
            assert f"cannot reach the dist-init address 127.0.0.9:{port} (connection refused" in message
            assert "\n" not in message


def test_fit_sizes_tp_across_nodes_with_gpus_per_node() -> None:
    model = Path(__file__).resolve().parent.parent / "sgtui" / "sim" / "models" / "Qwen3.6-27B"
    flags = ["--model-path", str(model), "--tp-size", "4", "--context-length", "32768"]
    one = sgtui("fit", "--gpu", "A6000", "--gpus", "4", "--sglang", "0.5.11", "--json", "--", *flags)
    two = sgtui(
        "fit", "--gpu", "A6000", "--gpus", "2", "--sglang", "0.5.11", "--json", "--", *flags, "--nnodes", "2"
    )
    assert one.returncode == 0 and two.returncode == 0, two.stderr
    a, b = json.loads(one.stdout), json.loads(two.stdout)
    # 2 nodes x 2 GPUs hold the model like 4 GPUs on one node: the same per-GPU arithmetic
    assert (a["weights_gib"], a["max_total_num_tokens"]) == (b["weights_gib"], b["max_total_num_tokens"])
