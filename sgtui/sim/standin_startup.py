"""A simulated SGLang startup acted out phase by phase, as sgtui's fit engine says SGLang would go:
distributed init (the rendezvous across nodes, the unbalanced-memory check), weights shard by shard,
the KV and Mamba pools, a speculative draft, CUDA graphs; memory rising on every rank, the log in the
version's wording, and SGLang's own errors where a step does not fit."""

from __future__ import annotations

import time
import traceback
from typing import TYPE_CHECKING, Any

from sgtui.sim import logfmt, rendezvous
from sgtui.sim.plan import (
    GRAPH_HINTS,
    PoolPlan,
    capture_sizes,
    cuda_oom_text,
    default_chunked_prefill,
    exception_text,
    report_dtype,
)
from sgtui.sim.standin_launch import CTX_GIB, PHASES, Launch
from sgtui.sim.state import gpu_rows

if TYPE_CHECKING:
    from sgtui.core.model import ModelFacts
    from sgtui.core.sglang.flags import LaunchSpec


class Startup(Launch):
    """The startup phases of a launch (its ranks placed and started)."""

    def start_up(self, spec: LaunchSpec, facts: ModelFacts, values: dict[str, Any]) -> int | None:
        """Distributed init, weights, pools, draft, graphs: the exit code of a launch that died, or None
        once it is ready to serve."""
        log, ranks, version = self.log, self.ranks, self.version
        log.ranks(ranks, lambda r: logfmt.init_dist_begin(version))
        if self.nnodes > 1:
            try:
                self.meeting.meet(values, spec.port, [r.index for r in ranks], spec.tp_size * spec.pp_size)
            except rendezvous.DistInitError as exc:
                return self.crash("dist", exc.text)
        self.sleep(PHASES["dist"] / 2)
        log.ranks(ranks, lambda r: "sglang is using nccl==2.27.5")
        for rank in ranks:
            self.hold(rank, CTX_GIB)
        self.sleep(PHASES["dist"] / 2)
        if logfmt.is_new(version):
            log.ranks(ranks, lambda r: logfmt.init_parallel_end(PHASES["dist"]))
        log.ranks(ranks, lambda r: logfmt.init_dist_end(version, PHASES["dist"], CTX_GIB))
        baseline = min(r.baseline_gib for r in ranks)
        starved = next((r for r in ranks if r.free_gib < CTX_GIB), None)
        if starved is not None:
            return self.crash(
                "dist",
                "RuntimeError: CUDA error: out of memory\nCUDA kernel errors might be asynchronously "
                "reported at some other API call, so the stacktrace below might be incorrect.\n"
                "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
            )
        if len(ranks) > 1:
            for rank in ranks:
                local = rank.baseline_gib
                if baseline < local * 0.9:
                    return self.crash(
                        "dist",
                        "RuntimeError: The memory capacity is unbalanced. Some GPUs may be occupied by other "
                        f"processes. min_per_gpu_memory={baseline!r}, local_gpu_memory={local!r}, "
                        f"local_gpu_memory * 0.9={local * 0.9!r}",
                    )
        try:
            report = self.fit(spec, facts, baseline)
        except Exception as exc:  # a fault in sgtui's own fit engine: show it as the scheduler's death
            trace = traceback.format_exc().rstrip("\n").splitlines()
            return self.crash("pool", f"{type(exc).__name__}: {exc}", trace)
        weights = float(report.get("weights_gib") or 0.0)
        log.ranks(ranks, lambda r: logfmt.load_weight_begin(self.avail(r)))
        if (oom := self.load_weights(weights)) is not None:
            return self.crash("weights", oom)
        dtype = report_dtype(report, facts)
        log.ranks(
            ranks,
            lambda r: logfmt.load_weight_end(
                version, PHASES["weights"], facts.architecture, dtype, self.avail(r), weights
            ),
        )
        self.sleep(PHASES["pools"] / 2)
        if report.get("error"):
            return self.crash("pool", exception_text(str(report["error"]), "RuntimeError"))
        pools = PoolPlan.from_report(report, facts, spec)
        if not logfmt.is_new(version):
            log.line(logfmt.kv_dtype_line(dtype), ranks[0].index)
        if pools.mamba is not None:
            size, conv, ssm, iss, icw = pools.mamba
            log.ranks(ranks, lambda r: logfmt.mamba_line(size, conv, ssm, iss, icw))
        log.ranks(ranks, lambda r: logfmt.kv_line(version, pools.tokens, pools.k_gib, pools.k_gib, dtype))
        for rank in ranks:
            self.hold(rank, rank.used_gib + pools.total_gib)
        self.sleep(PHASES["pools"] / 2)
        log.ranks(ranks, lambda r: logfmt.pool_end(self.avail(r)))
        if spec.speculative_algorithm and not logfmt.is_new(version):
            self.load_draft(report, pools, dtype)
        return self.capture_graphs(spec, report, pools)

    def fit(self, spec: LaunchSpec, facts: ModelFacts, baseline: float) -> dict[str, Any]:
        from sgtui.core.fit import fit
        from sgtui.core.gpus import GpuSpec

        smallest = min(gpu_rows(self.state, self.visible_gpus()), key=lambda g: g.total_mib)
        gpu = GpuSpec(name=smallest.name, mib=smallest.total_mib)
        # TP across nodes: each GPU holds 1/tp of the model, whichever node it is on
        n_gpus = len(self.visible_gpus()) * self.nnodes
        report = fit(spec, facts, gpu, n_gpus=n_gpus, version=self.version, free_gib=baseline)
        data: dict[str, Any] = report.to_json()
        return data

    def load_weights(self, weights: float) -> str | None:
        """Shard by shard, memory rising on every rank; the CUDA OOM text when a shard does not fit."""
        shards = self.shards
        t0 = time.monotonic()
        self.log.write(logfmt.shard_bar(0, shards, 0.0, self.version))
        base = {r.index: r.used_gib for r in self.ranks}
        step = weights / shards
        for done in range(1, shards + 1):
            self.sleep(PHASES["weights"] / shards)
            short = next((r for r in self.ranks if self.avail(r) < step + 0.05), None)
            if short is not None:
                self.log.write("\n")
                return cuda_oom_text(short.index, short.total_gib, self.avail(short), short.used_gib, step)
            for rank in self.ranks:
                self.hold(rank, base[rank.index] + step * done, util=5)
            self.log.write(
                "\r" + logfmt.shard_bar(done, shards, (time.monotonic() - t0) * self.speed, self.version)
            )
        self.log.write("\n\n")
        return None

    def load_draft(self, report: dict[str, Any], pools: PoolPlan, dtype: str) -> None:
        log = self.log
        draft_w = float(report.get("draft_weights_gib") or 0.0)
        log.ranks(self.ranks, lambda r: logfmt.load_weight_begin(self.avail(r)))
        self.sleep(PHASES["draft"] / 2)
        for rank in self.ranks:
            self.hold(rank, rank.used_gib + draft_w)
        log.ranks(
            self.ranks,
            lambda r: logfmt.load_weight_end(
                self.version, PHASES["draft"] / 2, pools.draft_arch, dtype, self.avail(r), draft_w
            ),
        )
        log.ranks(
            self.ranks,
            lambda r: logfmt.kv_line(self.version, pools.tokens, pools.draft_k_gib, pools.draft_k_gib, dtype),
        )
        for rank in self.ranks:
            self.hold(rank, rank.used_gib + 2 * pools.draft_k_gib)
        self.sleep(PHASES["draft"] / 2)
        log.ranks(self.ranks, lambda r: logfmt.pool_end(self.avail(r)))

    def capture_graphs(self, spec: LaunchSpec, report: dict[str, Any], pools: PoolPlan) -> int | None:
        if not spec.disable_cuda_graph:
            failed = self.capture(spec, report)
            if failed is not None:
                return failed
        chunked = spec.chunked_prefill_size or default_chunked_prefill(self.ranks[0].total_gib)
        self.log.line(
            logfmt.scheduler_summary(
                pools.tokens,
                chunked,
                spec.max_prefill_tokens,
                pools.max_running,
                pools.context_len,
                self.avail(self.ranks[0]),
            ),
            self.ranks[0].index,
        )
        return None

    def capture(self, spec: LaunchSpec, report: dict[str, Any]) -> int | None:
        """Decode CUDA graphs, largest batch first, each taking a little memory; a crash when it runs out."""
        log, version = self.log, self.version
        sizes = capture_sizes(spec, report)
        graph_gib = 0.30 + 0.02 * len(sizes)
        log.ranks(self.ranks, lambda r: logfmt.graph_begin(version, self.avail(r)))
        t0 = time.monotonic()
        for done, bs in enumerate(reversed(sizes), start=1):
            if min(self.avail(r) for r in self.ranks) < graph_gib * done / len(sizes) + 0.05:
                log.raw("")
                free_mib = max(self.avail(self.ranks[0]) * 1024, 0.0)
                return self.crash(
                    "graph",
                    "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 512.00 MiB. "
                    f"GPU 0 has a total capacity of {self.ranks[0].total_gib:.2f} GiB of which "
                    f"{free_mib:.2f} MiB is free.\n" + GRAPH_HINTS,
                )
            self.sleep(PHASES["graphs"] / max(len(sizes), 1))
            for rank in self.ranks:
                self.hold(rank, rank.used_gib + graph_gib / len(sizes), util=60)
            elapsed = (time.monotonic() - t0) * self.speed
            bar = logfmt.capture_bar(done, len(sizes), bs, self.avail(self.ranks[0]), elapsed)
            log.write(("\r" if done > 1 else "") + bar)
        log.write("\n")
        log.ranks(
            self.ranks,
            lambda r: logfmt.graph_end(version, PHASES["graphs"], graph_gib, self.avail(r), sizes),
        )
        for rank in self.ranks:
            self.hold(rank, rank.used_gib, util=0)
        return None
