"""`sgtui fit` against real SGLang startups: given the measured P and W, it predicts the logged pool."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.cases import fit_json

pytestmark = pytest.mark.sharedlogs

META_KEYS = {
    "config_of",
    "source",
    "head_dim_derived",
    "compress_ratio_counts",
    "hybrid_layer_pattern_counts",
}
TORCH_KV = {"torch.bfloat16": "bf16", "torch.float8_e4m3fn": "fp8_e4m3", "torch.float8_e5m2": "fp8_e5m2"}


def _version(entry: dict[str, Any]) -> str:
    match = re.match(r"\s*v?(\d+\.\d+(?:\.\d+)?)", str(entry.get("sglang_version") or ""))
    return match.group(1) if match else "0.5.11"


def _fit_json(entry: dict[str, Any], tmp: Path, extra: list[str], flags: list[str]) -> dict[str, Any]:
    folder = tmp / entry["file"].replace(".", "_")
    folder.mkdir()
    config = {k: v for k, v in entry["model_config"].items() if k not in META_KEYS}
    (folder / "config.json").write_text(json.dumps(config))
    facts = entry["facts"]
    argv = ["fit", "--config", str(folder), "--sglang", _version(entry), "--json", *extra]
    if entry.get("gpu"):
        argv += ["--gpu", entry["gpu"]]
    elif entry.get("gpu_mem_gib"):
        argv += ["--gpu", f"{entry['gpu_mem_gib']}GiB"]
    argv += ["--", "--tp-size", str(entry.get("tp") or facts.get("tp_size") or 1)]
    argv += ["--mem-fraction-static", str(facts["mem_fraction_static"]), *flags]
    if facts.get("dtype_arg"):
        argv += ["--dtype", facts["dtype_arg"]]
    kv = facts.get("kv_cache_dtype")
    kv = TORCH_KV.get(kv, kv)
    if kv and not kv.startswith("torch"):
        argv += ["--kv-cache-dtype", kv]
    if facts.get("page_size"):
        argv += ["--page-size", str(facts["page_size"])]
    return _run(argv)


def _run(argv: list[str]) -> dict[str, Any]:
    return fit_json(argv)  # exit 3 where the verdict is "fails" (the loaded-weights error), 0 otherwise


def _entries(shared_logs: Path) -> list[dict[str, Any]]:
    return json.loads((shared_logs / "manifest.json").read_text())


def test_measured_free_memory_and_weights_predict_the_logged_token_count(
    shared_logs: Path, tmp_path: Path
) -> None:
    checked: list[str] = []
    misses: list[str] = []
    for entry in _entries(shared_logs):
        facts = entry["facts"]
        tokens = facts.get("kv_tokens") or facts.get("max_total_num_tokens")
        p, w = facts.get("load_weight_begin_avail_gib"), facts.get("weight_mem_gib")
        if not (entry.get("model_config") and tokens and p and w and facts.get("mem_fraction_static")):
            continue
        flags = ["--context-length", str(facts["context_length"])] if facts.get("context_length") else []
        report = _fit_json(entry, tmp_path, ["--free-gib", str(p), "--weights-gib", str(w)], flags)
        checked.append(entry["file"])
        predicted = report["max_total_num_tokens"]
        if abs(predicted - tokens) > 0.005 * tokens:
            misses.append(f"{entry['file']}: predicted {predicted}, logged {tokens}")
    assert checked, "no log in the manifest has P, W, the token count and a model config"
    assert misses == []


def test_the_loaded_weights_error_names_the_minimum_viable_fraction(
    shared_logs: Path, tmp_path: Path
) -> None:
    checked = 0
    for entry in _entries(shared_logs):
        facts = entry["facts"]
        detail = entry.get("error_detail") or ""
        a, w = facts.get("avail_mem_after_weights_gib"), facts.get("weight_mem_gib")
        if "Loaded weights leave no GPU memory" not in detail or not (a and w and entry.get("model_config")):
            continue
        extra = ["--free-gib", str(a + w), "--weights-gib", str(w)]
        report = _fit_json({**entry, "sglang_version": "0.5.23"}, tmp_path, extra, [])
        assert report["verdict"] == "fails"
        assert report["error"].startswith("ValueError: Loaded weights leave no GPU memory for the KV cache")
        minimum = float(re.search(r"minimum viable = 1 - available/pre = ([\d.]+)", report["error"]).group(1))
        if facts.get("min_viable_mem_fraction_static"):
            assert minimum == pytest.approx(facts["min_viable_mem_fraction_static"], abs=0.001)
        checked += 1
    if not checked:
        pytest.skip("no log in the manifest ends with the 0.5.23 loaded-weights error")
