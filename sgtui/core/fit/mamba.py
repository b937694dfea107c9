"""The Mamba / linear-attention state pool: strategy, slots per request, K, and what it takes from rest.

Sources: server_args._handle_mamba_radix_cache and model_runner_kv_cache_mixin.handle_max_mamba_cache /
_calculate_mamba_ratio (0.5.9 to 0.5.15); mem_cache/kv_cache_configurator.py _handle_max_mamba_cache
(0.5.16 on) and arg_groups/overrides.py _mamba_radix_cache_resolution (0.5.15 on). Which rule applies
is the release window's (`Rules.mamba_state`, `mamba_radix_spec`, ...).
"""

from __future__ import annotations

from dataclasses import dataclass

from sgtui.core.fit import errors as fit_errors
from sgtui.core.flags import LaunchSpec
from sgtui.core.sglang.rules import Rules

GIB = 1 << 30


@dataclass
class MambaBudget:
    """The state pool's resolution for one launch; `rest` is the static budget it eats into (GiB)."""

    rest: float
    radix_disabled: bool
    overlap: bool = True
    strategy: str = ""
    ratio: int = 1  # state slots per running request
    k: int = 0  # max_mamba_cache_size
    spec_state_gib: float = 0.0  # speculative intermediate state taken from rest
    # what made the deductions that large, for the budget breakdown
    spec_requests: int = 0  # the running requests the speculative state was sized for
    spec_detail: str = ""  # "48 requests x 4 draft tokens"
    state_gib: float = 0.0  # the state pool taken from rest (K or K+1 slots, as the version counts)
    state_slots: int = 0
    k_rule: str = ""  # where K came from


def resolve_strategy(
    b: MambaBudget,
    spec: LaunchSpec,
    rules: Rules,
    *,
    speculative: bool,
    arch: str,
    extra_buffer_ok: bool,
) -> None:
    """The strategy, the radix-cache rules, and the slots each running request holds."""
    strategy = (spec.mamba_strategy or "auto").lower()
    b.overlap = not spec.disable_overlap_schedule
    if strategy == "auto":
        # from 0.5.14 auto resolves to extra_buffer where the architecture supports it (Qwen3-Next/3.5)
        eligible = (
            rules.mamba_auto_strategy == "extra_buffer"
            and extra_buffer_ok
            and (b.overlap or (spec.page_size or 1) > 1)
        )
        strategy = "extra_buffer" if eligible else "no_buffer"
    if strategy.startswith("extra_buffer") and b.radix_disabled and rules.extra_buffer_radix_error:
        raise fit_errors.PredictedError(rules.extra_buffer_radix_error)
    if strategy == "no_buffer" and not b.radix_disabled:
        if speculative and rules.mamba_radix_spec == "disable":
            b.radix_disabled = True  # "Disabling radix cache since speculative decoding ... not supported"
        elif speculative and rules.mamba_radix_spec == "raise":
            raise fit_errors.PredictedError(fit_errors.radix_conflict(arch))
        elif not speculative and rules.no_buffer_disables_overlap:
            b.overlap = False  # no_buffer with the radix cache turns the overlap scheduler off
    b.strategy = strategy
    if b.radix_disabled:
        b.ratio = 1
    elif strategy == "no_buffer":
        b.ratio = 3
    elif strategy == "extra_buffer_lazy":
        b.ratio = 4
    elif speculative and rules.extra_buffer_spec_ratio:
        b.ratio = rules.extra_buffer_spec_ratio
    elif rules.extra_buffer_spec_ratio:
        b.ratio = 5  # 0.5.9: 4 with speculative decoding, 5 without, whatever the overlap
    else:
        b.ratio = 5 if b.overlap else 4


def take_state(
    b: MambaBudget,
    spec: LaunchSpec,
    rules: Rules,
    *,
    slot: int,
    draft_tokens: int | None,
    max_running: int | None,
    dp: int,
) -> None:
    """Choose K and subtract the state pool (and the speculative intermediate state) from `b.rest`.

    split (0.5.9-0.5.12): the intermediate state first (mrr x D, uncapped), then K from the ratio
    split. joint (0.5.13-0.5.16): K = floor(budget / (slot x (1 + D/ratio))), intermediate =
    slot x min(mrr, K // ratio) x D. joint-padded (0.5.17 on): the pool's padding slot on both
    buffers, K = floor((budget - slot x (1 + D)) / (slot x (1 + D/ratio))), K+1 slots taken."""
    r = spec.mamba_full_memory_ratio
    d = draft_tokens or 0
    speculative = draft_tokens is not None and max_running is not None
    kind = rules.mamba_state
    if kind in ("always-off", "split-copies", "spec-first-512"):
        _take_state_before_059(b, spec, kind, slot=slot, d=d, max_running=max_running, dp=dp)
        return
    if kind == "split":
        if speculative:
            assert max_running is not None
            _spec(b, slot, max_running // dp, max_running // dp, d)  # before the split, uncapped
        if spec.max_mamba_cache_size is not None:
            b.k, b.k_rule = spec.max_mamba_cache_size // dp, "--max-mamba-cache-size"
        elif b.radix_disabled and max_running is not None:
            b.k, b.k_rule = max_running // dp, RULE_RUNNING
        else:
            b.k, b.k_rule = int((b.rest * r / (1 + r) * GIB) // slot), _split_rule(r)
        _state(b, slot, b.k)
        return
    pad = 1 if kind == "joint-padded" else 0
    floor_one = rules.mamba_requests_floor_one
    if spec.max_mamba_cache_size is not None:
        b.k, b.k_rule = spec.max_mamba_cache_size // dp, "--max-mamba-cache-size"
        if speculative:
            assert max_running is not None
            requests = max(1, max_running // dp) if floor_one else max_running // dp
            capped = min(requests, b.k // b.ratio)
            _spec(b, slot, capped, capped + pad, d)
    elif b.radix_disabled and max_running is not None:
        k = max_running // dp
        b.k, b.k_rule = (max(1, k) if floor_one else k), RULE_RUNNING
        if speculative:
            _spec(b, slot, b.k, b.k + pad, d)
    else:
        budget_bytes = b.rest * r / (1 + r) * GIB
        if speculative:
            assert max_running is not None
            # joint solve: main state + intermediate state = the Mamba share of rest
            b.k = int((budget_bytes - pad * slot * (1 + d)) // (slot * (1 + d / b.ratio)))
            b.k_rule = f"{_split_rule(r)}, solved together with the speculative state"
            requests = max(1, max_running // dp) if floor_one else max_running // dp
            capped = min(requests, b.k // b.ratio)
            _spec(b, slot, capped, capped + pad, d)
        else:
            b.k, b.k_rule = int((budget_bytes - pad * slot) // slot), _split_rule(r)
    if b.k <= 0 and rules.mamba_errors:
        raise fit_errors.PredictedError(fit_errors.mamba_cache_too_small(b.k, b.rest, slot))
    _state(b, slot, b.k + pad)  # from 0.5.17 the pool's padding slot is budgeted


RULE_RUNNING = "max running requests"


def _split_rule(ratio: float) -> str:
    return f"the --mamba-full-memory-ratio {ratio:g} share of the budget"


def _spec(b: MambaBudget, slot: int, requests: int, rows: int, d: int) -> None:
    """Take the speculative intermediate state: `rows` request rows x `d` draft tokens x one slot."""
    b.spec_requests = requests
    padding = " (+1 padding row)" if rows == requests + 1 else ""
    b.spec_detail = f"{requests} requests{padding} x {d} draft tokens"
    b.spec_state_gib = slot * rows * d / GIB
    b.rest -= b.spec_state_gib


def _state(b: MambaBudget, slot: int, slots: int) -> None:
    """Take `slots` state slots (K, or K+1 where the version budgets the padding slot)."""
    b.state_slots = slots
    b.state_gib = slots * slot / GIB
    b.rest -= b.state_gib


# The default state-pool size while the radix cache was off for hybrid models (0.5.2 to 0.5.8).
LEGACY_MAMBA_SLOTS = 512


def _take_state_before_059(
    b: MambaBudget,
    spec: LaunchSpec,
    kind: str,
    *,
    slot: int,
    d: int,
    max_running: int | None,
    dp: int,
) -> None:
    """The state pool as 0.5.2 to 0.5.8 sized it (model_runner.handle_max_mamba_cache of each).

    0.5.2-0.5.3: Qwen3-Next runs without the radix cache, K = --max-mamba-cache-size, else
    --max-running-requests, else 512. 0.5.4-0.5.6: without the radix cache the same; with it the
    ratio split, and each slot carries D speculative copies (K = share // (slot x (1+D))). 0.5.7-0.5.8:
    the 0.5.9 rule (intermediate state first, then the split), except that an explicit K or a disabled
    radix cache falls back to max_running_requests or 512."""
    r = spec.mamba_full_memory_ratio
    share_bytes = b.rest * r / (1 + r) * GIB
    explicit = spec.max_mamba_cache_size
    fallback = explicit if explicit is not None else (max_running or LEGACY_MAMBA_SLOTS)
    fallback_rule = (
        "--max-mamba-cache-size"
        if explicit is not None
        else "max running requests"
        if max_running
        else f"the default {LEGACY_MAMBA_SLOTS} slots"
    )
    if kind == "always-off":
        b.radix_disabled = True  # 0.5.2/0.5.3 always ran hybrid GDN models without the radix cache
        b.ratio = 1
        b.k, b.k_rule = fallback // dp, fallback_rule
        _state(b, slot, b.k)
        return
    if kind == "split-copies":
        if b.radix_disabled:
            b.k, b.k_rule = fallback, fallback_rule
        else:
            b.k, b.k_rule = int(share_bytes // slot // (1 + d)), _split_rule(r)
        b.k //= dp
        if d:
            # each slot carries d speculative copies (sized by slots, not by running requests)
            b.spec_detail = f"{b.k} slots x {d} draft tokens"
            b.spec_state_gib = b.k * slot * d / GIB
            b.rest -= b.spec_state_gib
        _state(b, slot, b.k)
        return
    if d and max_running is not None:
        _spec(b, slot, max_running // dp, max_running // dp, d)
        share_bytes = b.rest * r / (1 + r) * GIB
    if b.radix_disabled or explicit is not None:
        b.k, b.k_rule = fallback // dp, fallback_rule
    else:
        b.k, b.k_rule = int(share_bytes // slot), _split_rule(r)
    _state(b, slot, b.k)
