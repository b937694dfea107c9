"""Serving numbers from SGLang's own log lines, for a server started without `--enable-metrics`.

The scheduler prints, every `--decode-log-interval` (40) decode steps and for each prefill batch:
  Decode batch. #running-req: 3, #token: 812, token usage: 0.02, gen throughput (token/s): 95.12,
    #queue-req: 0
  Prefill batch, #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, #running-req: 0,
    #queue-req: 0
(each one line)
The heading moved across releases (`ServingRules.batch_heading` per window in core/sglang/windows.py);
the fields are `key: value` pairs in every release: "token usage" (or "full token usage" / "swa token
usage" on hybrid SWA models, whose max SGLang itself reports), "accept len" with speculative decoding,
"input throughput (token/s)" on prefill lines from 0.5.9. "KV cache pool is full. Retract requests.
#retracted_reqs: N, ..." (scheduler.py) counts retractions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from sgtui.core.serving.state import ServingSnapshot
from sgtui.core.sglang.windows import all_batch_headings, serving_rules

_PAIR = re.compile(r"(#?[A-Za-z][\w \-()/]*?): (-?[\d.]+|True|False)")
_RETRACT = re.compile(r"KV cache pool is full\. Retract requests\. #retracted_reqs: (\d+)")
RETRACT_TEXT = "KV cache pool is full. Retract requests"


def _heading(version: str | None) -> re.Pattern[str]:
    if version is not None:
        return re.compile(serving_rules(version).batch_heading)
    return re.compile("|".join(f"(?:{h})" for h in all_batch_headings()).replace("?P<kind>", "?:"))


def batch_fields(line: str, heading: re.Pattern[str]) -> tuple[str, dict[str, float]] | None:
    """("decode" | "prefill", {field: number}) for a batch line, else None."""
    m = heading.search(line)
    if m is None:
        return None
    kind = "decode" if "Decode batch" in m.group(0) else "prefill"
    fields: dict[str, float] = {}
    for key, value in _PAIR.findall(line[m.end() :]):
        if value in ("True", "False"):
            continue
        try:
            fields[key.strip()] = float(value)
        except ValueError:
            continue
    return kind, fields


class LogServingReader:
    """Feed log lines (with the clock at which they were read) -> the latest serving snapshot.

    `version` picks the release's heading; None accepts every release's."""

    def __init__(self, version: str | None = None) -> None:
        self.heading = _heading(version)
        self.snapshot: ServingSnapshot | None = None
        self.retracted = 0
        self._values: dict[str, float] = {}

    def feed(self, lines: Iterable[str], at: float) -> ServingSnapshot | None:
        changed = False
        for line in lines:
            if "batch" in line:
                parsed = batch_fields(line, self.heading)
                if parsed is not None:
                    self._take(*parsed)
                    changed = True
                    continue
            if RETRACT_TEXT in line:
                m = _RETRACT.search(line)
                self.retracted += int(m.group(1)) if m else 1
                changed = True
        if changed:
            self.snapshot = self._build(at)
        return self.snapshot

    def _take(self, kind: str, f: dict[str, float]) -> None:
        usage = f.get("token usage")
        if usage is None and ("full token usage" in f or "swa token usage" in f):
            usage = max(f.get("full token usage", 0.0), f.get("swa token usage", 0.0))
        for key, value in (
            ("running", f.get("#running-req")),
            ("queued", f.get("#queue-req")),
            ("kv_usage", usage),
        ):
            if value is not None:
                self._values[key] = value
        if kind == "decode":
            if "gen throughput (token/s)" in f:
                self._values["gen"] = f["gen throughput (token/s)"]
            if f.get("accept len"):
                self._values["spec"] = f["accept len"]
        else:
            if "input throughput (token/s)" in f:
                self._values["prompt"] = f["input throughput (token/s)"]
            new, cached = f.get("#new-token"), f.get("#cached-token")
            if new is not None and cached is not None and new + cached > 0:
                self._values["hit"] = cached / (new + cached)

    def _build(self, at: float) -> ServingSnapshot:
        v = self._values
        running, queued = v.get("running"), v.get("queued")
        return ServingSnapshot(
            source="log",
            at=at,
            gen_tokens_per_s=v.get("gen"),
            prompt_tokens_per_s=v.get("prompt"),
            running=None if running is None else int(running),
            queued=None if queued is None else int(queued),
            kv_usage=v.get("kv_usage"),
            cache_hit_rate=v.get("hit"),
            spec_accept_length=v.get("spec"),
            retracted=self.retracted,
        )
