"""`sgtui fit`: the command-line contract, the human table, and one-line errors for bad input."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sgtui.cli import main
from tests.cases import EXAMPLE_A_FLAGS, GPT_OSS_20B, LLAMA, MEASURED_A_ARGS, QWEN35, replaced

# the worked example as a user types it: abbreviations that `fit` resolves and reports
EXAMPLE_A_ABBREVIATED = replaced(
    EXAMPLE_A_FLAGS, {"--tp-size": "--tp", "--speculative-algorithm": "--speculative-algo"}
)


def _fit(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(["fit", *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    """The report, after checking the exit code says the verdict: 3 for "fails", else 0 (DESIGN.md)."""
    rc, out, err = _fit(capsys, "--json", *argv)
    data = json.loads(out)
    assert rc == (3 if data["verdict"] == "fails" else 0), err
    return data


def _example_a(version: str, *options: str) -> list[str]:
    """`fit` arguments for worked example A on A6000s with its measured memory, on one SGLang version."""
    return [
        *("--config", str(QWEN35), "--gpu", "A6000", *options, "--sglang", version, *MEASURED_A_ARGS),
        *("--", *EXAMPLE_A_ABBREVIATED),
    ]


def test_example_a_json_on_0_5_9_fails_with_sglangs_text(capsys: pytest.CaptureFixture[str]) -> None:
    data = _json(capsys, *_example_a("0.5.9", "--gpus", "2"))
    assert data["verdict"] == "fails"
    assert data["error"].endswith("Current value: self.server_args.mem_fraction_static=0.85")
    assert data["sglang_version"] == "0.5.9"
    assert data["kv_cell_bytes"] == 32768


def test_example_a_json_on_0_5_23_fits_with_nine_requests(capsys: pytest.CaptureFixture[str]) -> None:
    data = _json(capsys, *_example_a("0.5.23"))
    assert (data["verdict"], data["max_running_requests"]) == ("fits", 9)
    assert data["max_total_num_tokens"] == pytest.approx(248_129, abs=50)
    assert data["mamba"]["max_mamba_cache_size"] == 48
    assert data["swa"] is None


def test_example_b_defaults_from_the_gpu_preset(capsys: pytest.CaptureFixture[str]) -> None:
    data = _json(
        capsys,
        "--config",
        str(LLAMA / "config.json"),
        "--gpu",
        "H100-80G",
        "--free-gib",
        "78.5",
        "--weights-gib",
        "15",
        "--",
        "--tp",
        "1",
    )
    assert (data["mem_fraction_static"], data["mem_fraction_static_auto"]) == (0.83, 0.83)
    assert (data["max_total_num_tokens"], data["max_running_requests"]) == (410_869, 2048)


def test_model_path_folder_is_the_default_config(capsys: pytest.CaptureFixture[str]) -> None:
    data = _json(capsys, "--gpu", "48GiB", "--", "--model-path", str(LLAMA))
    assert data["gpu_total_gib"] == 48.0
    assert data["context_length"] == 131072


def test_without_gpu_the_card_is_guessed_from_the_free_memory(capsys: pytest.CaptureFixture[str]) -> None:
    data = _json(
        capsys, "--config", str(LLAMA), "--free-gib", "46.5", "--weights-gib", "15", "--", "--tp-size", "1"
    )
    assert data["gpu_total_gib"] == pytest.approx(49140 / 1024)  # an RTX A6000 leaves 46.5 GiB free
    assert any("guessed from --free-gib" in note for note in data["notes"])


def test_a_local_draft_model_folder_is_read(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text((LLAMA / "config.json").read_text())
    (tmp_path / "model.safetensors.index.json").write_text('{"metadata": {"total_size": 1073741824}}')
    data = _json(
        capsys,
        *("--config", str(LLAMA), "--gpu", "H100-80G", "--free-gib", "78", "--weights-gib", "15", "--"),
        *("--speculative-algorithm", "EAGLE", "--speculative-draft-model-path", str(tmp_path)),
    )
    assert data["draft_weights_gib"] == pytest.approx(1.0)


def test_human_table_shows_budget_verdict_error_and_warnings(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _fit(capsys, *_example_a("0.5.9"))
    assert rc == 3  # "fails": a script can gate a launch on the exit code
    assert "rest = A - P*(1-mfs) = 21.50 - 7.05 = 14.45 GiB" in out
    assert re.search(r"^  verdict +FAILS$", out, re.MULTILINE)
    assert "RuntimeError: Not enough memory." in out
    assert "warnings:" in out and "--max-running-requests" in out
    assert "--speculative-algo resolved to --speculative-algorithm" in out


def test_human_table_of_a_failing_launch_says_what_ate_the_budget(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _fit(capsys, *_example_a("0.5.9"))
    assert rc == 3
    assert re.search(r"^  - speculative state +13\.76 GiB: 48 requests x 4 draft tokens ", out, re.MULTILINE)
    assert re.search(r"^  - Mamba state +3\.44 GiB: 48 slots ", out, re.MULTILINE)
    assert re.search(r"^  = KV pool +-2\.75 GiB: -[\d,]+ tokens ", out, re.MULTILINE)
    why = re.search(r"^  why +(.*)$", out, re.MULTILINE)
    assert why is not None
    assert why.group(1).startswith(
        "the speculative state for 48 requests x 4 draft tokens takes 13.76 GiB of the 14.45 GiB static "
    )
    assert "2.75 GiB more" in why.group(1)


def test_human_table_of_a_fitting_launch_shows_the_same_breakdown(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _fit(capsys, *_example_a("0.5.23"))
    assert rc == 0
    assert re.search(r"^  - speculative state +2\.87 GiB: 9 requests \(\+1 padding row\) x 4 ", out, re.M)
    assert re.search(r"^  - Mamba state +3\.51 GiB: 49 slots = K 48 \+ 1 padding .*extra_buffer", out, re.M)
    assert re.search(r"^  = KV pool +7\.5\d GiB: 248,\d{3} tokens ", out, re.MULTILINE)
    assert re.search(r"^  verdict +FITS$", out, re.MULTILINE)
    assert not re.search(r"^  why ", out, re.MULTILINE)


def test_human_table_of_a_dense_model_blames_the_weights_when_no_pool_took_anything(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, _ = _fit(
        capsys,
        *("--config", str(LLAMA), "--gpu", "H100-80G", "--free-gib", "78.5", "--weights-gib", "70"),
        *("--", "--mem-fraction-static", "0.85"),
    )
    assert rc == 3
    assert re.search(r"^  = KV pool +-3\.28 GiB: -26,\d{3} tokens ", out, re.MULTILINE)
    assert re.search(r"^  why +after the weights the static budget is -3\.28 GiB: nothing is left", out, re.M)
    assert not re.search(r"^  max running requests", out, re.MULTILINE)


def test_json_budget_and_auto_fraction_as_sglang_prints_it(capsys: pytest.CaptureFixture[str]) -> None:
    data = _json(capsys, *_example_a("0.5.9"))
    assert [b["item"] for b in data["budget"][:3]] == [
        "static budget",
        "speculative state (48 requests x 4 draft tokens)",
        "Mamba state (48 slots)",
    ]
    assert data["budget"][-1]["gib"] == data["kv_pool_gib"] < 0
    assert data["mem_fraction_static_auto"] == 0.7546  # 0.816 x the VLM factor, 4 decimals


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--config", "/nonexistent/config.json", "--gpu", "A6000", "--"], "file not found"),
        (["--config", str(LLAMA), "--gpu", "Voodoo5", "--"], "unknown GPU"),
        (["--config", str(LLAMA), "--gpu", "A6000", "--", "--tp", "two"], "--tp"),
        (["--config", str(LLAMA), "--gpu", "A6000", "--", "--no-such-flag", "1"], "--no-such-flag"),
        (["--config", str(LLAMA), "--gpu", "A6000", "--free-gib", "lots", "--"], "--free-gib 'lots'"),
        (["--gpu", "A6000", "--", "--model-path", "Qwen/Qwen3-8B"], "not a local folder"),
        (["--config", str(LLAMA), "--"], "--gpu is needed"),
        (["--config", str(LLAMA), "--gpu", "A6000", "--gpus", "1", "--", "--tp", "2"], "needs 2 GPUs"),
        (["--config", str(LLAMA), "--gpu", "A6000", "--sglang", "latest", "--"], "latest"),
        # more free memory than the card holds would size a KV pool that cannot exist
        (
            ["--config", str(LLAMA), "--gpu", "H100-80G", "--free-gib", "200", "--"],
            "more than the whole H100",
        ),
        (["--config", str(LLAMA), "--gpu", "A6000", "--free-gib", "40,41,42", "--", "--tp", "2"], "3 values"),
        # SGLang's automatic fraction on a card too small: the card is named, not a flag nobody gave
        (["--config", str(LLAMA), "--gpu", "2GiB", "--"], "--gpu 2048 MiB GPU"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    rc, out, err = _fit(capsys, *argv)
    assert rc == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("sgtui fit: ")
    assert expected in err


def test_malformed_config_names_line_and_column(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text('{\n  "num_hidden_layers": 32,\n  oops\n}')
    rc, _, err = _fit(capsys, "--config", str(bad), "--gpu", "A6000", "--")
    assert rc == 2 and "line 3, column 3" in err and err.count("\n") == 1


def test_config_missing_a_field_names_it(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"num_hidden_layers": 2, "hidden_size": 64}))
    rc, _, err = _fit(capsys, "--config", str(tmp_path), "--gpu", "A6000", "--")
    assert rc == 2 and "'num_attention_heads'" in err


def test_bad_input_in_a_real_process_prints_no_traceback() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "sgtui", "fit", "--config", "/nonexistent", "--gpu", "A6000", "--"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1


def test_fit_imports_nothing_heavy() -> None:
    code = (
        "import sys; from sgtui.cli import main; "
        f"main(['fit', '--config', {str(LLAMA)!r}, '--gpu', 'A6000', '--json', '--']); "
        "heavy = ('textual', 'asyncssh', 'pynvml', 'plotext', 'platformdirs', 'yaml'); "
        "heavy = [m for m in heavy if m in sys.modules]; "
        "print('HEAVY', heavy, file=sys.stderr)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "HEAVY []" in proc.stderr


def test_free_memory_can_be_given_per_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    data = _json(
        capsys, "--config", str(LLAMA), "--gpu", "A6000", "--free-gib", "47,40", "--", "--tp-size", "2"
    )
    assert data["verdict"] == "fails" and "unbalanced" in data["error"]


def test_human_table_shows_the_sliding_window_split(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "config.json").write_text(json.dumps(GPT_OSS_20B))
    rc, out, _ = _fit(
        capsys,
        "--config",
        str(tmp_path),
        "--gpu",
        "H100-80G",
        "--free-gib",
        "78",
        "--weights-gib",
        "13",
        "--",
    )
    assert rc == 0
    assert "sliding window" in out and "SWA" in out
    assert re.search(r"^  verdict +FITS$", out, re.MULTILINE)


def test_the_exit_code_says_the_verdict_so_a_script_can_gate_a_launch(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """0 for fits or tight, 3 for fails (the report is printed either way), 2 for bad input."""
    fails, out, _ = _fit(capsys, *_example_a("0.5.9"))
    assert fails == 3 and re.search(r"^  verdict +FAILS$", out, re.MULTILINE)
    fits, out, _ = _fit(capsys, *_example_a("0.5.23"))
    assert fits == 0 and re.search(r"^  verdict +FITS$", out, re.MULTILINE)
    bad, _, _ = _fit(capsys, "--gpu", "A6000", "--", "--tp-size", "two")
    assert bad == 2
