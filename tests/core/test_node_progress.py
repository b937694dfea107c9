"""Across nodes: which node did not reach the milestone the others reached, and who joined the store."""

from __future__ import annotations

from sgtui.core.logs import LogClassifier
from sgtui.core.node_progress import (
    CrossNode,
    NodeProgress,
    attribute_peers,
    store_peers_from_proc,
    tp_tags,
)

BEGIN = "[2026-01-01 10:00:00 TP{r}] Init torch distributed begin.\n"
LOAD = "[2026-01-01 10:00:05 TP{r}] Load weight begin. avail mem=47.00 GB\n"


def nodes_fed(texts: list[str], stall_after: float = 30.0) -> CrossNode:
    cross = CrossNode(
        [NodeProgress(i, f"gpu-{i + 1}", tp_tags(i, len(texts), 4), started=0.0) for i in range(len(texts))],
        stall_after,
    )
    for rank, text in enumerate(texts):
        cross.observe(rank, LogClassifier().feed(text), now=1.0)
    return cross


def test_each_node_prints_its_own_tp_ranks() -> None:
    assert tp_tags(0, 2, 4) == ["TP0", "TP1"] and tp_tags(1, 2, 4) == ["TP2", "TP3"]
    assert tp_tags(0, 2, 1) == []


def test_the_node_behind_the_others_is_named_with_its_ranks_and_phase() -> None:
    ahead = BEGIN.format(r=0) + BEGIN.format(r=1) + LOAD.format(r=0) + LOAD.format(r=1)
    behind = BEGIN.format(r=2) + BEGIN.format(r=3)
    cross = nodes_fed([ahead, behind])
    assert cross.check(now=20.0) is None  # 19 s without progress is not yet a stall
    stall = cross.check(now=40.0)
    assert stall is not None and stall.phase == "distributed_init"
    assert [(b.rank, b.label, b.ranks) for b in stall.behind] == [(1, "gpu-2", ["TP2", "TP3"])]
    assert "node 1 (gpu-2) (ranks TP2, TP3) did not get past distributed init" in stall.behind[0].describe()


def test_when_every_node_waits_in_distributed_init_the_logs_name_nobody() -> None:
    cross = nodes_fed([BEGIN.format(r=0) + BEGIN.format(r=1), BEGIN.format(r=2) + BEGIN.format(r=3)])
    stall = cross.check(now=40.0)
    assert stall is not None and stall.phase == "distributed_init" and stall.behind == []


def test_only_node_0_serves_http_so_a_worker_is_not_behind_for_lacking_ready() -> None:
    head = (
        "[2026-01-01 10:00:09] INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)\n"
    )
    worker_done = (
        "[2026-01-01 10:00:08 TP2] max_total_num_tokens=1000, chunked_prefill_size=4096, "
        "max_prefill_tokens=16384, max_running_requests=8, context_len=32768, available_gpu_mem=6.63 GB\n"
    )
    cross = nodes_fed([worker_done.replace("TP2", "TP0") + head, worker_done])
    assert cross.lagging() == [] and cross.node(1).worker_done


def test_the_store_connections_name_the_node_that_never_joined() -> None:
    proc = (
        "  sl  local_address rem_address   st\n"
        "   0: 0100007F:61A8 00000000:0000 0A 0\n"  # the listening socket itself
        "   1: 0100007F:61A8 0100007F:D431 01 0\n"  # node 0's two ranks
        "   2: 0100007F:61A8 0100007F:D432 01 0\n"
        "   3: 0100007F:D431 0100007F:61A8 01 0\n"  # node 0's client side: another local port
    )
    v6 = "   0: 0000000000000000FFFF00000100007F:61A8 0000000000000000FFFF00000300007F:9000 01 0\n"
    peers = store_peers_from_proc(proc + v6, 25000)
    assert peers == ["127.0.0.1", "127.0.0.1", "127.0.0.3"]
    addresses = [["127.0.0.1"], ["127.0.0.2", "gpu-2"], ["127.0.0.3"]]
    assert attribute_peers(peers, addresses, [2, 2, 1]) == [1]
