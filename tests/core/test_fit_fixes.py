"""One ranking of fixes: each fix is fitted again, a "fits" fix ranks before a "tight" one, and the TUI's
question, `sgtui fit` and the diagnosis after the failure all lead with the same first fix."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from sgtui.cli import main
from sgtui.core.fit import fit
from sgtui.core.fit.fixes import apply_fix
from sgtui.core.gpus import parse_gpu
from sgtui.core.logs import classify_text, diagnose
from sgtui.core.model import load_model_facts
from sgtui.core.profiles.parse import load_profile
from sgtui.core.sglang.flags import LaunchSpec
from sgtui.ui.fitting import FitInputs, compute_fit
from sgtui.ui.screens.fit_confirm import best_fix
from tests.cases import EXAMPLE_A, LLAMA, LOGS, QWEN35

ROOT = Path(__file__).resolve().parents[2]
SIM_QWEN = ROOT / "sgtui" / "sim" / "models" / "Qwen3.6-27B"
SIGQUIT = "[2026-01-02 10:00:09] Received sigquit from a child process. It usually means the child failed."


def test_a_fix_that_fits_ranks_before_a_tight_one_and_each_carries_its_own_verdict() -> None:
    # Example A on 0.5.9: raising --mem-fraction-static to 0.931 gets past the pools but leaves little
    # slack (tight); 37 running requests fit outright, so they come first although the advice lists the
    # fraction first.
    m = load_model_facts(QWEN35)
    r = fit(EXAMPLE_A, m, parse_gpu("A6000"), n_gpus=2, version="0.5.9")
    assert r.warnings[0].flag == "--mem-fraction-static"
    verdicts = [f.verdict for f in r.fixes]
    assert verdicts == sorted(verdicts, key=["fits", "tight", "unknown", "fails"].index)
    first = r.first_fix()
    assert first is not None and first.verdict == "fits" and first.flag == "--max-running-requests"
    for f in r.fixes:  # each verdict is the fit of the launch with that one change
        again = fit(apply_fix(EXAMPLE_A, f.flag, f.value), m, parse_gpu("A6000"), n_gpus=2, version="0.5.9")
        assert again.verdict == f.verdict


def test_a_launch_that_fits_has_no_fixes() -> None:
    r = fit(LaunchSpec(), load_model_facts(LLAMA), parse_gpu("H100-80G"), version="0.5.9")
    assert r.verdict == "fits" and r.fixes == [] and r.first_fix() is None


def _cli_fit(argv: list[str]) -> dict[str, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(argv)
    return json.loads(out.getvalue())


def _three_first_fixes(
    values: dict[str, Any], model: Path, gpu: str, version: str, free_gib: float, log: str
) -> tuple[Any, Any, Any]:
    """(the TUI question's fix, `sgtui fit --json`'s first, the diagnosis's first) as (flag, value)."""
    card = parse_gpu(gpu)
    config = json.loads((model / "config.json").read_text())
    facts = load_model_facts(model)
    inputs = FitInputs(
        model_config=config,
        weight_bytes=None if facts.weights_estimated else facts.weight_bytes,
        gpu_name=card.name,
        gpu_mib=card.mib,
        version=version,
        free_gib=free_gib,
    )
    tui_report = compute_fit(values, inputs)
    tui = best_fix(tui_report)
    argv = ["fit", "--config", str(model), "--gpu", gpu, "--sglang", version, "--free-gib", str(free_gib)]
    flags: list[str] = []
    for flag, value in values.items():
        flags += [flag] if value is True else [flag, str(value)]
    cli_report = _cli_fit([*argv, "--json", "--", *flags])
    cli = next(f for f in cli_report["fixes"] if f["verdict"] in ("fits", "tight"))
    diagnosis = diagnose(classify_text(log), cli_report)[0]
    first = diagnosis.suggestions[0]
    assert tui is not None
    return (tui[0], str(tui[1])), (cli["flag"], str(cli["value"])), (first.flag, first.value)


def test_the_qwen36_27b_0_5_9_profile_gets_one_first_fix_everywhere() -> None:
    # profiles/qwen36-27b-2xa6000.yaml on the simulated host's model (sgtui/sim/models: the real
    # safetensors index) and 2x A6000, the free memory of its failing log (46.98 GiB).
    profile = load_profile(ROOT / "profiles" / "qwen36-27b-2xa6000.yaml")
    launch = {
        k: v for k, v in profile.sglang.items() if k not in ("--reasoning-parser", "--tool-call-parser")
    }
    log = (LOGS / "v059_tp2_nextn_not_enough_memory.log").read_text()
    tui, cli, diag = _three_first_fixes(launch, SIM_QWEN, "A6000", "0.5.9", 46.98, log)
    assert tui == cli == diag
    assert tui[0] == "--max-running-requests"  # not the tight --mem-fraction-static raise


def _enough_memory_log(mfs: float, weights: float, avail: float) -> str:
    return (
        "[2026-01-01 10:00:00] server_args=ServerArgs(model_path='m', "
        f"mem_fraction_static={mfs}, tp_size=1)\n"
        f"[2026-01-01 10:00:01 TP0] Load weight begin. avail mem={weights + avail:.2f} GB\n"
        "[2026-01-01 10:00:30 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, "
        f"avail mem={avail:.2f} GB, mem usage={weights:.2f} GB.\n"
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n" + SIGQUIT + "\n"
    )


@pytest.mark.parametrize(
    ("values", "gpu", "version", "free", "weights"),
    [
        # Llama-3.1-8B on an L4 at 0.5: 15 GiB of weights against 0.5 x 21.6 GiB
        ({"--mem-fraction-static": 0.5}, "L4", "0.5.9", 21.6, 15.0),
        # the same on a 24 GB RTX 4090 under 0.5.23 with the context the model allows
        ({"--mem-fraction-static": 0.6}, "RTX-4090", "0.5.23", 22.9, 15.0),
    ],
)
def test_other_failing_launches_get_one_first_fix_everywhere(
    values: dict[str, Any], gpu: str, version: str, free: float, weights: float
) -> None:
    log = _enough_memory_log(values["--mem-fraction-static"], weights, free - weights)
    tui, cli, diag = _three_first_fixes(values, LLAMA, gpu, version, free, log)
    assert tui == cli == diag


def test_sgtui_fit_lists_the_fixes_in_rank_order(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["fit", "--config", str(QWEN35), "--gpu", "A6000", "--gpus", "2", "--sglang", "0.5.9", "--"]
    argv += ["--tp-size", "2", "--mem-fraction-static", "0.85", "--context-length", "32768"]
    argv += ["--speculative-algorithm", "NEXTN", "--speculative-num-steps", "3"]
    argv += ["--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]
    main(argv)
    out = capsys.readouterr().out
    block = out.split("fixes (best first", 1)[1].split("warnings:", 1)[0]
    lines = [line.strip() for line in block.splitlines()[1:] if line.strip()]
    assert lines[0].startswith("1. --max-running-requests") and lines[0].endswith("-> fits")
    assert lines[-1].startswith(f"{len(lines)}. --mem-fraction-static") and lines[-1].endswith("-> tight")
