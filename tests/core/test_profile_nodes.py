"""Multi-node profiles: `nodes:` instead of host/target, every problem at once with its line."""

from __future__ import annotations

import pytest

from sgtui.core.profiles import ProfileError, Target, dump_profile, parse_profile

TWO_NODES = """\
name: big
nodes:
  - host: gpu-1
    target: {kind: pct, id: 129}
  - host: gpu-2
    target: {kind: docker, id: sglang}
    env: {NCCL_SOCKET_IFNAME: eth1}
python: /opt/sglang/bin/python
env: {NCCL_DEBUG: INFO}
gpus: [0, 1, 2, 3]
sglang:
  model-path: /models/DeepSeek-V3
  tp-size: 8
"""


def problems(text: str) -> list[str]:
    with pytest.raises(ProfileError) as info:
        parse_profile(text, "p.yaml")
    return [str(p) for p in info.value.problems]


def test_nodes_give_each_rank_its_place_and_node_0_is_the_profile_host() -> None:
    profile = parse_profile(TWO_NODES, "p.yaml")
    assert profile.nnodes == 2
    assert (profile.host, profile.target) == ("gpu-1", Target("pct", 129))
    assert [n.host for n in profile.nodes or []] == ["gpu-1", "gpu-2"]
    assert profile.nodes and profile.nodes[1].target == Target("docker", "sglang")


def test_sgtui_adds_nnodes_rank_and_address_per_node_and_merges_node_env() -> None:
    profile = parse_profile(TWO_NODES, "p.yaml")
    argv = profile.node_argv(1, "10.0.0.1:5000")
    assert argv[-6:] == ["--nnodes", "2", "--node-rank", "1", "--dist-init-addr", "10.0.0.1:5000"]
    assert "--tp-size" in argv and argv[argv.index("--tp-size") + 1] == "8"  # the total across nodes
    assert profile.node_env(0) == {"NCCL_DEBUG": "INFO"}
    assert profile.node_env(1) == {"NCCL_DEBUG": "INFO", "NCCL_SOCKET_IFNAME": "eth1"}


def test_a_multi_node_profile_dumps_and_loads_back_equal() -> None:
    profile = parse_profile(TWO_NODES.replace("python:", "dist_init_addr: 10.0.0.1:5000\npython:"), "p.yaml")
    again = parse_profile(dump_profile(profile), "p.yaml")
    assert again.nodes == profile.nodes and again.dist_init_addr == "10.0.0.1:5000"


def test_every_problem_of_a_broken_nodes_list_is_reported_at_once_with_its_line() -> None:
    found = problems(
        "name: x\n"
        "host: gpu-1\n"  # line 2: host belongs in nodes
        "nodes:\n"
        "  - host: gpu-1\n"
        "    target: {kind: pct, id: abc}\n"  # line 5
        "  - {host: gpu-2, tgt: 1}\n"  # line 6
        "  - gpu-3\n"  # line 7
        "dist_init_addr: nowhere\n"  # line 8
        "python: /p/bin/python\n"
        "sglang:\n"
        "  model-path: /m\n"
        "  nnodes: 2\n"  # line 12
        "  node-rank: 1\n"  # line 13
        "  dist-init-addr: 1.2.3.4:5\n"  # line 14
    )
    assert [p.split(":")[1] for p in found] == ["2", "5", "6", "7", "8", "12", "13", "14"]
    assert "names host and target per node" in found[0]
    assert "nodes[0].target.id" in found[1] and "nodes[1].tgt" in found[2] and "nodes[2]" in found[3]
    assert "not HOST:PORT" in found[4]
    assert "sgtui sets --nnodes itself" in found[5] and "--node-rank itself" in found[6]
    assert "top-level `dist_init_addr:`" in found[7]


def test_tp_size_must_split_evenly_over_the_nodes_and_gpus_count_per_node() -> None:
    found = problems(TWO_NODES.replace("tp-size: 8", "tp-size: 7").replace("[0, 1, 2, 3]", "[0, 1]"))
    assert any("cannot be split evenly over 2 nodes" in p for p in found)
    ok = parse_profile(TWO_NODES.replace("[0, 1, 2, 3]", "[0, 1, 2, 3]"), "p.yaml")
    assert ok.gpus == [0, 1, 2, 3]
    short = problems(TWO_NODES.replace("[0, 1, 2, 3]", "[0, 1]"))
    assert any("needs 4 per node" in p for p in short)


def test_two_nodes_on_the_same_host_and_target_are_refused() -> None:
    found = problems(
        TWO_NODES.replace(
            "host: gpu-2\n    target: {kind: docker, id: sglang}",
            "host: gpu-1\n    target: {kind: pct, id: 129}",
        )
    )
    assert any("the same host and target as nodes[0]" in p for p in found)


def test_the_managed_flags_are_refused_in_a_single_node_profile_too() -> None:
    found = problems("name: x\nhost: h\npython: /p/bin/python\nsglang:\n  model-path: /m\n  node-rank: 0\n")
    assert found == [
        "p.yaml:6: --node-rank: sgtui sets --node-rank itself from the profile's `nodes:` list; "
        "remove it here"
    ]
