"""The automatic --mem-fraction-static before the per-GPU reservation formula (0.1.x to 0.5.2).

Each era's rule is named by its window (`Rules.auto_mfs`, `Rules.tp_fractions`), read from that
release's server_args.py `__post_init__`.
"""

from __future__ import annotations

from sgtui.core.flags import LaunchSpec
from sgtui.core.sglang.rules import Rules


def _tp_fraction(parallel: int, fractions: tuple[float, float, float, float, float]) -> float:
    """A fixed fraction per TP size: (1, 2, 4, 8, 16 GPUs and more)."""
    tp1, tp2, tp4, tp8, tp16 = fractions
    if parallel >= 16:
        return tp16
    if parallel >= 8:
        return tp8
    if parallel >= 4:
        return tp4
    return tp2 if parallel >= 2 else tp1


def _reserved_class_mib(gpu_mib: int, parallel: int) -> float:
    """0.4.7.post1 to 0.5.2: MiB kept back per GPU class."""
    if gpu_mib < 35 * 1024:
        return (2.8 + parallel / 10) * 1024
    if gpu_mib < 90 * 1024:
        return (9.5 + parallel / 2) * 1024
    if gpu_mib < 160 * 1024:
        return (12 + parallel / 2) * 1024
    return 32 * 1024


def legacy_auto_mfs(spec: LaunchSpec, gpu_mib: int, rules: Rules) -> float | None:
    """SGLang's automatic fraction in the eras before the reservation formula (None once `formula`):

    - tp-table (0.1.x to 0.4.5): a fraction per TP size (0.1.x TP 1 0.90; 0.2.15-0.3.x 0.88; TP 8
      0.83, 0.82 from 0.3.6, 0.81 from 0.4.0);
    - tp-table-80g (0.4.6, .post1): that table up to 80 GiB cards, else all but 13 GiB;
    - tp-table-bump (0.4.6.post2 to .post5): the table by TP x PP (0.88 above 80 GiB), then above
      96 GiB a 48 GiB-scaled bump capped at all but 18 GiB;
    - tp-table-bump-spec (0.4.7): the same, 0.79 above 180,000 MiB, all but 20 GiB (or x0.95) with
      speculative decoding;
    - class-reserve (0.4.7.post1 to 0.5.2): a reservation per GPU class (+2 GiB EAGLE, +6 GiB
      STANDALONE from 0.5.2, +4 GiB DP attention), rounded to 3 decimals."""
    rule = rules.auto_mfs
    if rule == "formula":
        return None
    parallel = spec.tp_size * spec.pp_size
    algo = (spec.speculative_algorithm or "").upper()
    if rule == "tp-table":
        return _tp_fraction(spec.tp_size, rules.tp_fractions)
    if rule == "tp-table-80g":
        table = _tp_fraction(spec.tp_size, rules.tp_fractions)
        return table if gpu_mib <= 81920 else (gpu_mib - 13 * 1024) / gpu_mib
    if rule in ("tp-table-bump", "tp-table-bump-spec"):
        mfs = _tp_fraction(parallel, rules.tp_fractions) if gpu_mib <= 81920 else 0.88
        with_spec = rule == "tp-table-bump-spec"
        if with_spec and gpu_mib > 180_000:
            return 0.79
        if gpu_mib > 96 * 1024:
            reserve = (20 if with_spec and algo else 18) * 1024
            return min(mfs + 48 * 1024 * (1 - mfs) / gpu_mib, (gpu_mib - reserve) / gpu_mib)
        return mfs * 0.95 if with_spec and algo else mfs
    reserved = _reserved_class_mib(gpu_mib, parallel)
    if algo:
        reserved += rules.class_reserve_standalone_mib if algo == "STANDALONE" else 2 * 1024
    if spec.enable_dp_attention:
        reserved += 4 * 1024
    return round((gpu_mib - reserved) / gpu_mib, 3)
