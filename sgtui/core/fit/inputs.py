"""What the fit resolves before sizing the pools: the window's rules, SGLang's defaults, P, W, the draft."""

from __future__ import annotations

from dataclasses import dataclass

from sgtui.core.fit.defaults import Defaults
from sgtui.core.fit.pools import KvLayout, StateShape
from sgtui.core.fit.spec import SpecDecoding
from sgtui.core.flags import LaunchSpec
from sgtui.core.model import ModelFacts
from sgtui.core.sglang.rules import Rules
from sgtui.core.sglang.windows import Window

GIB = 1 << 30


@dataclass(frozen=True)
class Inputs:
    """Everything resolved before the pools: the release window, SGLang's defaults, P, W, the draft."""

    spec: LaunchSpec
    model: ModelFacts
    window: Window
    defaults: Defaults
    mfs: float
    p: float
    w: float
    free_per_gpu: tuple[float, ...]
    weights_estimated: bool
    draft_w: float
    sd: SpecDecoding | None
    max_running: int | None  # the user's value, or 48 under speculative decoding
    dp: int
    ctx: int
    page: int
    layout: KvLayout
    shape: StateShape | None
    draft_layers: int

    @property
    def available(self) -> float:
        """A: free memory after the weights (from 0.5.14 the draft loads before profiling too)."""
        return self.p - self.w - (self.draft_w if self.rules.draft_weights_in_budget else 0.0)

    @property
    def rules(self) -> Rules:
        return self.window.rules

    @property
    def slack_budget(self) -> float:
        return self.p * (1 - self.mfs)
