"""Milestone lines: each startup step SGLang announces, the numbers it prints with it, and the facts they
give. `milestone_line` returns True when the line was one (then no other rule looks at it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sgtui.core.logs import rules
from sgtui.core.logs.facts import FROM_ARGS, FROM_RUNTIME, FROM_SUMMARY
from sgtui.core.logs.server_args import ArgsDump, is_server_args_line
from sgtui.core.logs.state import NEW_STYLE

if TYPE_CHECKING:
    from sgtui.core.logs.classifier import LogClassifier
    from sgtui.core.logs.state import LogEvent

_DRAFT_TYPES = ("NextN", "Eagle", "EAGLE", "MTP", "Draft", "draft")


def milestone_line(
    c: LogClassifier, body: str, n: int, time: str | None, ranks: tuple[str, ...], events: list[LogEvent]
) -> bool:
    if is_server_args_line(body):
        dump = ArgsDump(body)
        if dump.closed:
            c.facts(dump.facts(), FROM_ARGS)
        else:
            c.open_args(dump)  # hard-wrapped: the next lines continue it
        c.phases.milestone("server_args", n, time, ranks, {}, body, events)
        return True
    if "Init torch distributed" in body or "Memory baseline taken" in body or "Init nccl begin" in body:
        if body.startswith("Memory baseline taken"):
            c.state.notes.add(NEW_STYLE)
        values: dict[str, Any] = {}
        m = rules.MEM_USAGE.search(body)
        if m:
            values["mem_usage_gib"] = rules.num(m.group(1))
            c.fact("distributed_init_mem_gib", values["mem_usage_gib"], FROM_RUNTIME)
        c.phases.milestone("init_torch_distributed", n, time, ranks, values, body, events)
        return True
    if "oad weight begin" in body:  # "Load weight begin. avail mem=..."; 0.1.x "load weight begin."
        m = rules.LOAD_BEGIN.search(body)
        values = {"avail_gib": rules.num(m.group(1))} if m else {}
        if m and not is_draft_load(c, ranks, peek=True):
            c.fact("load_weight_begin_avail_gib", values["avail_gib"], FROM_RUNTIME)
        c.phases.milestone("load_weight_begin", n, time, ranks, values, body, events)
        return True
    if "oad weight end" in body:
        values = rules.parse_load_end(body)
        if not values and not body.lower().startswith("load weight end"):  # 0.1.x: "Load weight ends."
            return False
        if is_draft_load(c, ranks, model_type=values.get("type")):
            c.fact("draft_weight_mem_gib", values.get("mem_usage_gib"), FROM_RUNTIME)
            c.fact("draft_model_class", values.get("type"), FROM_RUNTIME)
        else:
            c.fact("weight_mem_gib", values.get("mem_usage_gib"), FROM_RUNTIME)
            c.fact("avail_mem_after_weights_gib", values.get("avail_gib"), FROM_RUNTIME)
            c.fact("model_class", values.get("type"), FROM_RUNTIME)
            c.fact("dtype", values.get("dtype"), FROM_RUNTIME)
            c.fact("quantization_loaded", values.get("quant"), FROM_RUNTIME)
            c.fact("weight_load_s", values.get("elapsed_s"), FROM_RUNTIME)
        c.phases.milestone("load_weight_end", n, time, ranks, values, body, events)
        return True
    if "KV Cache" in body:
        m = rules.KV_CACHE.search(body)
        if m is None:
            return False
        label, dtype, tokens, k_size, v_size, kv_size = m.groups()
        values: dict[str, Any] = {"tokens": int(tokens)} if tokens else {}
        if label:
            values["label"] = label
        if dtype:
            values["dtype"] = dtype
        if k_size is not None:
            values["k_size_gib"] = rules.num(k_size)
            if v_size is not None:
                values["v_size_gib"] = rules.num(v_size)
        elif kv_size is not None:
            values["kv_size_gib"] = rules.num(kv_size)
        if label == "SWA":
            c.fact("swa_kv_tokens", values.get("tokens"), FROM_RUNTIME)
        else:
            c.fact("kv_tokens", values.get("tokens"), FROM_RUNTIME)
            c.fact("k_size_gib", values.get("k_size_gib"), FROM_RUNTIME)
            c.fact("v_size_gib", values.get("v_size_gib"), FROM_RUNTIME)
            c.fact("kv_size_gib", values.get("kv_size_gib"), FROM_RUNTIME)
            c.fact("kv_cache_dtype", dtype, FROM_RUNTIME)
        c.phases.milestone("kv_cache_allocated", n, time, ranks, values, body, events)
        return True
    if body.startswith("SWAKVPool "):
        # "SWAKVPool mem usage: 79.94 GB, swa size: 798276, full size: 997846" (0.5.9+): both pools at
        # once; kv_tokens stays what the first KV line said (0.5.9 logs the sliding-window pool first).
        m = rules.SWA_KV_POOL.search(body)
        if m is not None:
            c.fact("kv_pool_gib", rules.num(m.group(1)), FROM_RUNTIME)
            c.fact("swa_kv_tokens", int(m.group(2)), FROM_RUNTIME)
            c.fact("full_kv_tokens", int(m.group(3)), FROM_RUNTIME)
        return True
    if "Post-capture KV sizing: KV cache allocated" in body:
        m = rules.POST_CAPTURE_KV.search(body)
        if m is not None:  # the real pool, replacing the upper bound the KV line gave
            c.fact("kv_tokens", int(m.group(2)), FROM_SUMMARY)
            c.fact("kv_size_gib", rules.num(m.group(3)), FROM_SUMMARY)
            for upper_bound in ("k_size_gib", "v_size_gib"):
                c.store.drop(upper_bound)
        return True
    if "Mamba Cache is allocated" in body:
        m = rules.MAMBA.search(body)
        if m is None:
            return False
        size, conv, ssm, inter_ssm, inter_conv = m.groups()
        values = {
            "max_mamba_cache_size": int(size),
            "conv_state_gib": rules.num(conv),
            "ssm_state_gib": rules.num(ssm),
        }
        c.fact("mamba_cache_size", int(size), FROM_RUNTIME)
        c.fact("mamba_conv_state_gib", values["conv_state_gib"], FROM_RUNTIME)
        c.fact("mamba_ssm_state_gib", values["ssm_state_gib"], FROM_RUNTIME)
        if inter_ssm is not None:
            values["intermediate_ssm_gib"] = rules.num(inter_ssm)
            values["intermediate_conv_gib"] = rules.num(inter_conv)
            c.fact("mamba_intermediate_ssm_gib", values["intermediate_ssm_gib"], FROM_RUNTIME)
            c.fact("mamba_intermediate_conv_gib", values["intermediate_conv_gib"], FROM_RUNTIME)
        c.phases.milestone("mamba_cache_allocated", n, time, ranks, values, body, events)
        return True
    if "sliding window memory pool" in body:
        m = rules.SWA_POOL.search(body)
        if m is None:
            return False
        all_swa, full, swa = m.groups()
        values = {"swa_layer_tokens": int(swa), "all_swa": bool(all_swa)}
        if full:
            values["full_layer_tokens"] = int(full)
            c.fact("swa_full_layer_tokens", int(full), FROM_RUNTIME)
        c.fact("swa_layer_tokens", int(swa), FROM_RUNTIME)
        c.phases.milestone("swa_pool", n, time, ranks, values, body, events)
        return True
    if "Memory pool end" in body:
        m = rules.AVAIL.search(body)
        values = {"avail_gib": rules.num(m.group(1))} if m else {}
        if m:
            c.fact("memory_pool_end_avail_gib", values["avail_gib"], FROM_RUNTIME)
        c.phases.milestone("memory_pool_end", n, time, ranks, values, body, events)
        return True
    if "graph begin" in body and "Capture" in body:
        if "Capture target " in body:  # 0.5.23 names each capture target/draft; 0.5.9 does not
            c.state.notes.add(NEW_STYLE)
        values = rules.parse_graph_line(body)
        c.fact("cuda_graph_begin_avail_gib", values.get("avail_gib"), FROM_RUNTIME)
        c.phases.milestone("cuda_graph_begin", n, time, ranks, values, body, events)
        return True
    if "graph end" in body and "Capture" in body:
        values = rules.parse_graph_line(body)
        c.fact("cuda_graph_mem_gib", values.get("mem_usage_gib"), FROM_RUNTIME)
        c.fact("cuda_graph_end_avail_gib", values.get("avail_gib"), FROM_RUNTIME)
        c.phases.milestone("cuda_graph_end", n, time, ranks, values, body, events)
        return True
    if "Capture cuda graph bs" in body:
        m = rules.GRAPH_BS.search(body)
        if m:
            sizes = [int(x) for x in m.group(1).replace(",", " ").split()]
            c.fact("cuda_graph_batch_sizes", len(sizes), FROM_RUNTIME)
            c.fact("cuda_graph_max_bs_captured", max(sizes, default=None), FROM_RUNTIME)
        return True
    if body.startswith(("max_total_num_token", "Max_total_num_token")):  # 0.1.x: "Max_total_num_token="
        values = rules.parse_summary(body)
        if "max_total_num_tokens" not in values:
            return False
        c.facts(values, FROM_SUMMARY)
        c.phases.milestone("max_total_num_tokens", n, time, ranks, values, body, events)
        return True
    if "Uvicorn running on" in body:
        m = rules.UVICORN.search(body)
        values = {"scheme": m.group(1) or "http", "host": m.group(2), "port": int(m.group(3))} if m else {}
        if m:
            c.fact("uvicorn_address", f"{values['host']}:{values['port']}", FROM_RUNTIME)
        c.phases.milestone("uvicorn_running", n, time, ranks, values, body, events)
        c.awaiting_first_answer = "ready" not in c.state.milestones
        return True
    if "fired up and ready to roll" in body:
        c.phases.milestone("ready", n, time, ranks, {}, body, events)
        return True
    if "ummy health check server" in body and (
        "started" in body or "Starting" in body or "scheduled" in body
    ):
        # a node of a multi-node launch with node_rank >= 1 never starts Uvicorn nor prints the banner: once
        # its schedulers are up it serves /health from a dummy server (engine.py ->
        # launch_dummy_health_check_server: "Dummy health check server started in background thread at ...";
        # to 0.4.x "Starting dummy health check server at ..." / "... scheduled on existing loop at ...")
        c.phases.milestone("ready", n, time, ranks, {"worker_node": True}, body, events)
        return True
    return False


def is_draft_load(
    c: LogClassifier, ranks: tuple[str, ...], model_type: str | None = None, peek: bool = False
) -> bool:
    """The second weight load on a rank (or a NextN/EAGLE/MTP class) is the speculative draft model."""
    key = " ".join(ranks)
    count = c.load_ends.get(key, 0)
    if peek:
        return count >= 1
    c.load_ends[key] = count + 1
    return count >= 1 or (model_type is not None and any(t in model_type for t in _DRAFT_TYPES))
