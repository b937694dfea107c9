"""The free memory before the weights when nothing was measured: the GPU total less the baseline
table's figure for the card and TP (core/fit/baseline.py), said in the notes and the JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from sgtui.core.errors import UserError
from sgtui.core.fit import fit
from sgtui.core.fit.baseline import estimated_loss
from sgtui.core.gpus import parse_gpu
from sgtui.core.model import load_model_facts
from sgtui.core.sglang.flags import LaunchSpec
from tests.cases import LLAMA


@pytest.mark.parametrize(
    ("gpu", "tp", "logged"),
    [
        ("H100-80G", 1, 78.81),  # docs.sglang.ai quick start, 0.4.1
        ("H100-80G", 1, 78.48),  # a 0.5.2x benchmark log
        ("B200", 1, 177.57),
        ("L4", 4, 21.63),  # ../shared/logs/001.log
        ("MI355X", 8, 283.53),
        ("MI300X", 1, 191.33),
    ],
)
def test_the_estimate_lands_within_its_stated_error_of_real_logs(gpu: str, tp: int, logged: float) -> None:
    card = parse_gpu(gpu)
    lost = estimated_loss(card, tp)
    assert abs(card.gib - lost.loss_gib - logged) <= lost.error_gib + 1e-9


def test_rocm_at_tp_8_loses_far_more_than_the_old_flat_guess() -> None:
    # the old estimate was total - 0.75 - 0.25 GiB: MI355X at TP 8 logs 4.47 GiB gone before the weights
    card = parse_gpu("MI355X")
    r = fit(LaunchSpec(tp_size=8), load_model_facts(LLAMA), card, version="0.5.9", advise=False)
    assert r.baseline_free_gib == pytest.approx(283.53, abs=0.01)


def test_the_report_says_when_it_uses_the_table() -> None:
    m = load_model_facts(LLAMA)
    card = parse_gpu("H100-80G")
    estimated = fit(LaunchSpec(), m, card, version="0.5.9")
    assert any("baseline table" in n and "+/- 0.20" in n for n in estimated.notes)
    assert estimated.to_json()["baseline_error_gib"] == 0.2
    measured = fit(LaunchSpec(), m, card, version="0.5.9", free_gib=78.5)
    assert not any("baseline table" in n for n in measured.notes)
    assert measured.to_json()["baseline_error_gib"] is None


def test_sgtui_fit_text_names_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    from sgtui.cli import main

    main(["fit", "--config", str(LLAMA), "--gpu", "L4", "--", "--tp-size", "4"])
    out = capsys.readouterr().out
    assert re.search(r"estimated from the baseline table: the GPU total less 0\.86 GiB", out)


@pytest.mark.sharedlogs
def test_shared_logs_with_a_named_card_fall_within_the_stated_error(shared_logs: Path) -> None:
    entries: list[dict[str, Any]] = json.loads((shared_logs / "manifest.json").read_text())
    checked = 0
    for e in entries:
        p, gpu, tp = e["facts"].get("load_weight_begin_avail_gib"), e.get("gpu"), e.get("tp")
        if not (p and gpu and tp) or "7495" in str(e.get("source")):  # #7495: another process held 4.6 GiB
            continue
        try:
            card = parse_gpu(gpu)
        except UserError:
            continue  # a card without a preset (its nvidia-smi total is not known here)
        lost = estimated_loss(card, int(tp))
        assert abs(card.gib - lost.loss_gib - p) <= lost.error_gib + 1e-9, e["file"]
        checked += 1
    assert checked >= 2
