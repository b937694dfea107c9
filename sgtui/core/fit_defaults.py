"""SGLang's GPU-dependent defaults, per version family: the tier table and the automatic
--mem-fraction-static.

Read from server_args.py `_handle_gpu_memory_settings` (0.5.9, 0.5.11) and
arg_groups/memory_hook.py `handle_gpu_memory_settings` / `reserve_for_graph_mb` (0.5.23); the
automatic fraction of older releases (0.3.x to 0.5.2, which predate the reservation formula) and
their multimodal shrink come from each release's server_args.py and model_runner.py. The family is
`memory_family`'s (nearest studied release); the flag tables no longer use families (every release has
its own, `core/sglang/flags.py`), and the release windows of `core/sglang/windows.py` replace this.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sgtui.core.errors import UserError
from sgtui.core.model import MULTIMODAL_OFF_BY_DEFAULT, PIECEWISE_DISABLED_ARCHS, ModelFacts
from sgtui.core.sglang.flags import LaunchSpec

FAMILIES = ("0.5.9", "0.5.11", "0.5.23")

_VERSION = re.compile(r"^\s*v?(\d+)\.(\d+)(?:\.(\d+))?")


def memory_family(version: str) -> str:
    """The studied release (FAMILIES) whose memory rules a version follows: the nearest one, ties to the
    older; a version in another minor series gets the newest family not newer than it.

    Kept for the fit engine while its rules move to release windows; the flags do not use it."""
    wanted = version_tuple(version)

    def distance(family: str) -> tuple[int, int]:
        fam = version_tuple(family)
        major_minor = abs((fam[0] - wanted[0]) * 1000 + (fam[1] - wanted[1]))
        return (major_minor, abs(fam[2] - wanted[2]) if major_minor == 0 else 0)

    best = min(FAMILIES, key=lambda fam: (distance(fam), FAMILIES.index(fam)))
    if distance(best)[0] > 0:
        older = [fam for fam in FAMILIES if version_tuple(fam) <= wanted]
        best = older[-1] if older else FAMILIES[0]
    return best


def version_tuple(version: str) -> tuple[int, int, int]:
    """(major, minor, patch) of a version string such as "0.5.10.post1" or "v0.4.3"."""
    match = _VERSION.match(version)
    if not match:
        raise UserError(f"--sglang {version!r}: not a version; use one such as 0.5.9, 0.5.11 or 0.5.23")
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)


def rule_version(version: str) -> tuple[int, int, int]:
    """The release whose rules apply: the version itself, except an untagged source build ("0.0.0.dev…",
    what `pip show sglang` reports for a git checkout), which gets its family's release."""
    parts = version_tuple(version)
    if parts[:2] == (0, 0):
        return version_tuple(memory_family(version))
    return parts


def version_family(version: str) -> tuple[str, str]:
    """(family, note): which studied release's memory rules a version follows.

    The mapping is `memory_family`'s (nearest release, ties to the older one)."""
    parts = version_tuple(version)
    family = memory_family(version)
    if parts[:2] == (0, 0):
        return family, f"SGLang {version} is an untagged build: using the {family} rules"
    if parts < (0, 5, 9):
        return family, f"SGLang {version} is older than 0.5.9: using the 0.5.9 base formula"
    if parts == version_tuple(family):
        return family, f"SGLang {family} rules"
    return family, f"SGLang {version} was not inspected: using the {family} rules (the nearest release)"


@dataclass(frozen=True)
class Defaults:
    """What SGLang resolves before loading anything: tier sizes and the automatic mfs."""

    chunked_prefill_size: int
    cuda_graph_max_bs: int
    prefill_graph: bool  # piecewise (0.5.9/0.5.11) or breakable (0.5.23) prefill CUDA graph
    prefill_graph_sizes: int
    reserved_mib: float  # what the automatic mfs leaves out, MiB
    activation_mib: float  # the part of it meant for activations and CUDA graphs (no floor, no spec)
    mem_fraction_static_auto: float


def defaults_family(family: str, parts: tuple[int, int, int]) -> str:
    """The family whose default-setting rules a version follows: 0.5.10 already has 0.5.11's
    handle_gpu_memory_settings (prefill graph on by default, +4 GiB for EAGLE) and its error texts,
    though its flag table is the 0.5.9 family's."""
    return "0.5.11" if family == "0.5.9" and parts >= (0, 5, 10) else family


def _tier(gpu_mib: int, tp: int, family: str) -> tuple[int, int]:
    if gpu_mib < 20 * 1024:
        return 2048, 8
    if gpu_mib < 35 * 1024:
        if family == "0.5.23":
            return 4096, 48 if tp < 4 else 160
        return 2048, 24 if tp < 4 else 80
    if gpu_mib < 60 * 1024:
        return 4096, 32 if tp < 4 else 160
    if gpu_mib < 160 * 1024:
        return 8192, 256 if tp < 4 else 512
    return 16384, 512


def prefill_graph_sizes(max_tokens: int) -> int:
    """How many token counts the piecewise/breakable prefill graph captures up to max_tokens."""
    sizes = [
        *range(4, 33, 4),
        *range(48, 257, 16),
        *range(288, 513, 32),
        *range(576, 1025, 64),
        *range(1280, 4097, 256),
        *range(4608, max_tokens + 1, 512),
    ]
    return sum(1 for s in sizes if s <= max_tokens)


# 0.5.23 configs/model_config.py multimodal_breakable_cuda_graph_supported_model_archs (a subset).
BREAKABLE_OK_MULTIMODAL = frozenset(
    {
        "Qwen3_5ForConditionalGeneration",
        "Qwen3_5MoeForConditionalGeneration",
        "KimiK25ForConditionalGeneration",
    }
)


def multimodal_enabled(spec: LaunchSpec, model: ModelFacts) -> bool:
    """Whether SGLang serves this model as multimodal: a VLM architecture, not --language-only, and
    for Gemma3/Llama4/Step3-VL only with --enable-multimodal."""
    if not model.is_multimodal or spec.language_only:
        return False
    return model.architecture not in MULTIMODAL_OFF_BY_DEFAULT or bool(spec.values.get("--enable-multimodal"))


def runtime_multimodal_factor(spec: LaunchSpec, model: ModelFacts, parts: tuple[int, int, int]) -> float:
    """0.4.0 to 0.4.8 shrink every multimodal launch's fraction in ModelRunner, a set one too
    ("Automatically reduce --mem-fraction-static to X because this is a multimodal model"): x0.95
    up to 0.4.5, x0.90 from 0.4.6. 0.4.9 dropped it; 0.4.10 adjusts only the automatic value."""
    if not (0, 4, 0) <= parts < (0, 4, 9) or not multimodal_enabled(spec, model):
        return 1.0
    return 0.95 if parts < (0, 4, 6) else 0.90


def prefill_graph_enabled(spec: LaunchSpec, model: ModelFacts, family: str) -> bool:
    """Whether the prefill CUDA graph is captured (and so reserved for in the automatic mfs).

    0.5.9: the piecewise graph is opt-in. 0.5.11: on by default, off for some architectures, VLMs,
    DP attention, torch.compile, PP and hierarchical cache (server_args._handle_piecewise_cuda_graph).
    0.5.23: the breakable graph is on by default and off under PP, for multimodal models outside an
    allowlist and for DeepSeek-V4 (cuda_graph_hook.apply_cuda_graph_compatibility)."""
    if family == "0.5.9":
        return spec.enable_piecewise_cuda_graph and not spec.disable_piecewise_cuda_graph
    if spec.disable_piecewise_cuda_graph:
        return False
    multimodal = multimodal_enabled(spec, model)
    if family == "0.5.23":
        if spec.disable_cuda_graph or spec.pp_size > 1 or model.architecture.startswith("DeepseekV4"):
            return False
        return not (multimodal and model.architecture not in BREAKABLE_OK_MULTIMODAL)
    return not (
        model.architecture in PIECEWISE_DISABLED_ARCHS
        or multimodal
        or spec.enable_dp_attention
        or spec.enable_torch_compile
        or spec.pp_size > 1
        or spec.enable_hierarchical_cache
    )


def _tp_tier_mfs(parallel: int, tp8: float) -> float:
    """The oldest rule: a fixed fraction per TP size (0.3.x to 0.4.7)."""
    if parallel >= 16:
        return 0.79
    if parallel >= 8:
        return tp8
    if parallel >= 4:
        return 0.85
    return 0.87 if parallel >= 2 else 0.88


def _reserved_tier_mib(gpu_mib: int, parallel: int) -> float:
    """0.4.8 to 0.5.2: MiB kept back per GPU class (server_args.__post_init__)."""
    if gpu_mib < 35 * 1024:
        return (2.8 + parallel / 10) * 1024
    if gpu_mib < 90 * 1024:
        return (9.5 + parallel / 2) * 1024
    if gpu_mib < 160 * 1024:
        return (12 + parallel / 2) * 1024
    return 32 * 1024


def post_release(version: str) -> int:
    """N of a ".postN" release (0 otherwise): a few memory rules changed between post releases."""
    match = re.search(r"\.post(\d+)", version)
    return int(match.group(1)) if match else 0


def legacy_auto_mfs(spec: LaunchSpec, gpu_mib: int, version: str) -> float | None:
    """SGLang's automatic mem-fraction-static before 0.5.3, when the per-GPU reservation formula of
    resolve_defaults arrived (None from 0.5.3 on). Read from each era's server_args.py:

    - 0.3.x to 0.4.5: a fraction per TP size (TP 8: 0.83 in 0.3.2, 0.82 in 0.3.6, 0.81 from 0.4.0);
    - 0.4.6, 0.4.6.post1: that table up to 80 GiB cards, else all but 13 GiB;
    - 0.4.6.post2 to .post5: the table (0.88 above 80 GiB), then above 96 GiB a 48 GiB-scaled bump
      capped at all but 18 GiB;
    - 0.4.7: the same, 0.79 above 180,000 MiB, all but 20 GiB (or x0.95) with speculative decoding;
    - 0.4.7.post1 to 0.5.2: a reservation per GPU class (+2 GiB EAGLE, +6 GiB STANDALONE from 0.5.2,
      +4 GiB DP attention), rounded to 3 decimals."""
    parts, post = rule_version(version), post_release(version)
    if parts >= (0, 5, 3):
        return None
    parallel = spec.tp_size * spec.pp_size
    algo = (spec.speculative_algorithm or "").upper()
    if parts < (0, 4, 6):
        tp8 = 0.83 if parts < (0, 3, 6) else 0.82 if parts < (0, 4, 0) else 0.81
        return _tp_tier_mfs(spec.tp_size, tp8)
    if parts == (0, 4, 6) and post < 2:
        return _tp_tier_mfs(spec.tp_size, 0.81) if gpu_mib <= 81920 else (gpu_mib - 13 * 1024) / gpu_mib
    if parts == (0, 4, 6) or (parts == (0, 4, 7) and post == 0):
        mfs = _tp_tier_mfs(parallel, 0.81) if gpu_mib <= 81920 else 0.88
        newer = parts == (0, 4, 7)
        if newer and gpu_mib > 180_000:
            return 0.79
        if gpu_mib > 96 * 1024:
            reserve = (20 if newer and algo else 18) * 1024
            return min(mfs + 48 * 1024 * (1 - mfs) / gpu_mib, (gpu_mib - reserve) / gpu_mib)
        return mfs * 0.95 if newer and algo else mfs
    reserved = _reserved_tier_mib(gpu_mib, parallel)
    if algo:
        reserved += 6 * 1024 if algo == "STANDALONE" and parts >= (0, 5, 2) else 2 * 1024
    if spec.enable_dp_attention:
        reserved += 4 * 1024
    return round((gpu_mib - reserved) / gpu_mib, 3)


def _vlm_factor(model: ModelFacts) -> float:
    """server_args.adjust_mem_fraction_for_vlm: 0.95 times a clamp on the ViT's size vs ViT-L/14."""
    layers = model.vision_num_hidden_layers or 24
    hidden = model.vision_hidden_size or 1024
    ratio = layers * hidden**2 / (24 * 1024**2)
    return 0.95 * max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0)))


def resolve_defaults(
    spec: LaunchSpec, model: ModelFacts, gpu_mib: int, family: str, version: str | None = None
) -> Defaults:
    """The tier sizes and SGLang's automatic mem-fraction-static for this launch on this GPU
    (`version`, when given, selects the pre-0.5.3 rules for the automatic fraction, and 0.5.10's
    handle_gpu_memory_settings, which is 0.5.11's: the prefill graph on by default)."""
    parts = rule_version(version) if version else (0, 5, 9)
    family = defaults_family(family, parts)
    chunk_default, bs_default = _tier(gpu_mib, spec.tp_size, family)
    chunk = spec.chunked_prefill_size if spec.chunked_prefill_size is not None else chunk_default
    max_bs = spec.cuda_graph_max_bs
    if max_bs is None:
        max_bs = bs_default
        if family == "0.5.23" and spec.max_running_requests is not None:
            max_bs = min(max_bs, spec.max_running_requests)
    prefill_graph = prefill_graph_enabled(spec, model, family)
    graph_tokens = chunk if not model.is_mla else (2048 if family != "0.5.23" else min(8192, chunk))
    if spec.max_total_tokens is not None and family != "0.5.9":
        graph_tokens = min(graph_tokens, spec.max_total_tokens)
    n_sizes = prefill_graph_sizes(graph_tokens) if prefill_graph else 0

    activation = 512 + 1.5 * max(chunk if chunk > 0 else spec.max_prefill_tokens, 2048)
    if not (family == "0.5.23" and spec.disable_cuda_graph):
        activation += 2 * max_bs
    if spec.enable_dp_attention:
        activation += 3 * max_bs * spec.dp_size
        if max_bs > 300:
            activation += 1.5 * max_bs * spec.dp_size
    if prefill_graph:
        # 8 MiB per captured size; from 0.5.11 on an MLA backend reserves a flat 1.5 GiB instead
        activation += 1536 if model.is_mla and family != "0.5.9" else 8 * n_sizes
    reserved = activation + spec.tp_size * spec.pp_size / 8 * 1024
    if gpu_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    algo = (spec.speculative_algorithm or "").upper()
    if family != "0.5.23" and algo:
        if algo == "STANDALONE":
            reserved += 6 * 1024
        elif algo != "NGRAM":
            reserved += 2 * 1024 if family == "0.5.9" else 4 * 1024
    mfs = round((gpu_mib - reserved) / gpu_mib, 3)
    legacy = legacy_auto_mfs(spec, gpu_mib, version) if version else None
    if legacy is not None:
        mfs = legacy
    vlm_adjusted = parts >= (0, 4, 10)  # adjust_mem_fraction_for_vlm arrived in 0.4.10
    if vlm_adjusted and multimodal_enabled(spec, model) and model.has_vision:
        mfs = mfs * _vlm_factor(model)
    return Defaults(
        chunked_prefill_size=chunk,
        cuda_graph_max_bs=max_bs,
        prefill_graph=prefill_graph,
        prefill_graph_sizes=n_sizes,
        reserved_mib=reserved,
        activation_mib=activation,
        mem_fraction_static_auto=mfs,
    )
