"""GPU presets and sizes, as nvidia-smi reports them."""

from __future__ import annotations

import math

import pytest

from sgtui.core.errors import UserError
from sgtui.core.gpus import GPU_PRESETS, guess_gpu_from_free, parse_gpu


@pytest.mark.parametrize(
    ("text", "name", "mib"),
    [
        ("A6000", "A6000", 49140),
        ("a6000", "A6000", 49140),
        ("h100 80g", "H100-80G", 81559),
        ("RTX_PRO_6000", "RTX-PRO-6000", 97887),
        ("NVIDIA H100 80GB HBM3", "H100-80G", 81559),
        ("A100-SXM4-40GB", "A100-40G", 40960),
        ("NVIDIA GeForce RTX 4090", "RTX-4090", 24564),
        ("NVIDIA RTX A6000", "A6000", 49140),
        ("4090", "RTX-4090", 24564),
    ],
)
def test_names_match_presets_regardless_of_case_and_punctuation(text: str, name: str, mib: int) -> None:
    gpu = parse_gpu(text)
    assert (gpu.name, gpu.mib) == (name, mib)


@pytest.mark.parametrize(
    ("text", "mib"), [("49140MiB", 49140), ("48GiB", 49152), ("48G", 49152), ("80 GB", 81920)]
)
def test_sizes_are_read_in_mib_or_gib(text: str, mib: int) -> None:
    assert parse_gpu(text).mib == mib


def test_the_presets_the_brief_names_have_nvidia_smi_figures() -> None:
    expected = {
        "A6000": 49140,
        "L4": 23034,
        "A100-40G": 40960,
        "A100-80G": 81920,
        "H100-80G": 81559,
        "H200": 143771,
        "RTX-PRO-6000": 97887,
        "L40S": 46068,
        "RTX-4090": 24564,
    }
    assert {k: GPU_PRESETS[k] for k in expected} == expected


def test_unknown_name_lists_the_presets() -> None:
    with pytest.raises(UserError, match=r"unknown GPU; use one of .*T4, .*L4, .*A6000.*49140MiB"):
        parse_gpu("Voodoo5")


def test_a_bare_small_number_asks_for_a_unit() -> None:
    with pytest.raises(UserError, match="give a unit, such as 48GiB"):
        parse_gpu("48")


@pytest.mark.parametrize(
    ("free_gib", "name"),
    [
        (22.39, "RTX-4090"),  # a Llama-3.1-8B log: 22.39 GiB free, too much for a 22.49 GiB L4
        (78.81, "H100-80G"),
        (177.57, "B200"),
        (15.24, "RTX-4080"),
        (75.02, "H100-80G"),  # sgl-project/sglang#7495: another process held 4.6 GiB of an 80 GB H100
        (283.53, "MI355X"),
    ],
)
def test_the_card_behind_a_measured_baseline_is_the_smallest_preset_with_room_for_the_context(
    free_gib: float, name: str
) -> None:
    gpu = guess_gpu_from_free(free_gib)
    assert gpu.mib == GPU_PRESETS[name] and gpu.name.startswith(name)


def test_a_baseline_no_preset_explains_gets_free_memory_plus_a_typical_context() -> None:
    gpu = guess_gpu_from_free(275.75)  # a B300 in a real log: no preset that large
    assert gpu.mib == math.ceil((275.75 + 0.75) * 1024)


@pytest.mark.parametrize(
    ("printed", "name", "mib"),
    [
        # names exactly as nvidia-smi / rocm-smi print them
        ("NVIDIA H800", "H800", 81559),
        ("NVIDIA H20", "H20", 97871),
        ("NVIDIA L20", "L20", 46068),
        ("NVIDIA L40", "L40", 46068),
        ("NVIDIA L40S", "L40S", 46068),
        ("NVIDIA L4", "L4", 23034),
        ("NVIDIA GeForce RTX 2080 Ti", "RTX-2080-Ti", 11264),
        ("NVIDIA GeForce RTX 3090", "RTX-3090", 24576),
        ("NVIDIA GeForce RTX 5080", "RTX-5080", 16303),
        ("NVIDIA GeForce RTX 5090", "RTX-5090", 32607),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX-PRO-6000", 97887),
        ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "RTX-PRO-6000", 97887),
        ("NVIDIA A10", "A10", 23028),
        ("NVIDIA A10G", "A10G", 23028),
        ("NVIDIA A30", "A30", 24576),
        ("NVIDIA A100-PCIE-40GB", "A100-40G", 40960),
        ("NVIDIA A100-SXM4-80GB", "A100-80G", 81920),
        ("NVIDIA A800-SXM4-80GB", "A800", 81920),
        ("NVIDIA H100 PCIe", "H100-PCIe", 81559),
        ("NVIDIA H100 80GB HBM3", "H100-80G", 81559),
        ("NVIDIA H100 NVL", "H100-NVL", 95830),
        ("NVIDIA H200", "H200", 143771),
        ("NVIDIA H200 NVL", "H200", 143771),
        ("NVIDIA GH200 480GB", "GH200", 97871),
        ("NVIDIA B200", "B200", 183359),
        ("NVIDIA GB200", "GB200", 189471),
        ("NVIDIA B300 SXM6 AC", "B300", 275040),
        ("Tesla T4", "T4", 15360),
        ("AMD Instinct MI250X/MI250", "MI250X", 65520),
        ("AMD Instinct MI300X", "MI300X", 196592),
        ("AMD Instinct MI308X", "MI308X", 196592),
        ("AMD Instinct MI325X", "MI325X", 262144),
        ("AMD Instinct MI355X", "MI355X", 294912),
    ],
)
def test_printed_names_are_accepted_with_the_memory_the_tool_reports(
    printed: str, name: str, mib: int
) -> None:
    assert (parse_gpu(printed).name, parse_gpu(printed).mib) == (name, mib)


def test_the_l4_is_22_49_gib_usable_not_24() -> None:
    assert round(parse_gpu("NVIDIA L4").gib, 2) == 22.49


def test_a_derived_size_is_never_guessed_from_a_baseline() -> None:
    # 15.24 GiB free fits a 16303 MiB RTX 5080 too, but that size was worked out, not seen printed
    assert guess_gpu_from_free(15.24).name.startswith("RTX-4080")


def test_rocm_cards_are_known_by_preset_or_printed_name() -> None:
    from sgtui.core.gpus import is_rocm, preset_name

    assert is_rocm("MI300X") and is_rocm("AMD Instinct MI355X") and not is_rocm("NVIDIA H100 80GB HBM3")
    assert preset_name("NVIDIA H100 80GB HBM3") == "H100-80G" and preset_name("Voodoo5") is None
