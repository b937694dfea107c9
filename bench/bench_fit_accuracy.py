"""How close `fit()` comes to real SGLang startups when less is measured (run by hand).

For every real log with a model config, the card, the logged free memory P ("Load weight begin. avail
mem="), the logged weights W ("Load weight end ... mem usage=") and the logged token count N, three fits:
  measured   P and W given (the exact path),
  P only     P given, W from the config (what the TUI has once nvidia-smi is read),
  config     nothing measured: P from the card, W from the config (a fit before any host is reached),
and for logs that failed for memory, whether the verdict says "fails".

Sources: tests/core/test_fit_reallogs.py CASES (public logs, each described there) and ../shared/logs
(manifest.json). Compare two trees by running this script with PYTHONPATH pointing at each:

    git archive main | tar -x -C /tmp/fit-main
    PYTHONPATH=/tmp/fit-main .venv/bin/python bench/bench_fit_accuracy.py
    .venv/bin/python bench/bench_fit_accuracy.py
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.append(str(ROOT))  # tests.* and sgtui from here unless PYTHONPATH names another tree

from sgtui.core.fit import fit  # noqa: E402
from sgtui.core.gpus import parse_gpu  # noqa: E402
from sgtui.core.model import load_model_facts, model_facts_from_config  # noqa: E402
from sgtui.core.sglang.flags import parse_argv  # noqa: E402

MODELS = ROOT / "tests" / "fixtures" / "models"
SHARED = ROOT.parent.parent / "shared" / "logs"
if not SHARED.is_dir():
    SHARED = Path("/work/shared/logs")


@dataclass(frozen=True)
class Case:
    name: str
    facts: Any
    gpu: str | None
    version: str
    flags: tuple[str, ...]
    p: float
    w: float
    tokens: int | None
    failed_for_memory: bool = False


# the card of each test_fit_reallogs case, from its description there (None: not a preset card)
_CARDS = {
    "qwq-32b 4xL4": "L4",
    "llama-3.1-8b h100": "H100-80G",
    "llama-3.1-8b 24GB": "RTX-4090",
    "llama-3-8b mi300x": "MI300X",
    "kimi-k2.5 mi355x": "MI355X",
    "qwen3-8b b200": "B200",
    "qwen3.5-9b 2x4090": "RTX-4090",
    "qwen3-30b-a3b fp8 h100": "H100-80G",
    "glm-5 fp8 kv mi355x": "MI355X",
    "qwen3-0.6b fp8 busy h100": "H100-80G",
}


def _cases() -> list[Case]:
    from tests.core.test_fit_reallogs import CASES

    out = []
    for c in CASES:
        card = next((v for k, v in _CARDS.items() if c.name.startswith(k)), None)
        facts = load_model_facts(MODELS / c.model / "config.json")
        out.append(
            Case(c.name, facts, card, c.version or "0.5.11", c.flags, c.free_gib, c.weights_gib, c.tokens)
        )
    for e in json.loads((SHARED / "manifest.json").read_text()) if SHARED.is_dir() else []:
        f = e["facts"]
        if e["file"] in ("001.log",):  # the same startup as the first test case
            continue
        if not (e.get("model_config") and f.get("weight_mem_gib") and e.get("gpu")):
            continue
        cfg = {k: v for k, v in e["model_config"].items() if not k.endswith("_derived") and k != "source"}
        try:
            facts = model_facts_from_config(cfg)
            card = e["gpu"]
            parse_gpu(card)
        except Exception:
            continue
        flags = ("--tp-size", str(e.get("tp") or 1), "--mem-fraction-static", str(f["mem_fraction_static"]))
        p = f.get("load_weight_begin_avail_gib") or (
            f.get("avail_mem_after_weights_gib", 0) + f["weight_mem_gib"]
        )
        memory = e.get("error_class") in ("not_enough_memory",)
        tokens = f.get("kv_tokens") or f.get("max_total_num_tokens")
        out.append(
            Case(f"shared {e['file']}", facts, card, "0.5.23", flags, p, f["weight_mem_gib"], tokens, memory)
        )
    return out


def _run(case: Case, mode: str) -> dict[str, Any]:
    spec = parse_argv(list(case.flags), case.version).spec
    gpu = parse_gpu(case.gpu) if case.gpu else parse_gpu(f"{case.p + 1.0:.2f}GiB")
    kwargs: dict[str, Any] = {}
    if mode in ("measured", "P only"):
        kwargs["free_gib"] = case.p
    if mode == "measured":
        kwargs["weights_gib"] = case.w
    r = fit(spec, case.facts, gpu, version=case.version, advise=False, **kwargs)
    return {
        "tokens": r.max_total_num_tokens,
        "w": r.weights_gib,
        "p": r.baseline_free_gib,
        "verdict": r.verdict,
    }


def main() -> None:
    import sgtui

    print(f"sgtui from {Path(sgtui.__file__).parent}")
    for mode in ("measured", "P only", "config"):
        errors: list[float] = []
        w_err: list[float] = []
        p_err: list[float] = []
        within = verdict_ok = verdicts = 0
        for case in _cases():
            if mode == "config" and case.gpu is None:
                continue
            got = _run(case, mode)
            w_err.append(100 * (got["w"] - case.w) / case.w)
            p_err.append(got["p"] - case.p)
            if case.failed_for_memory:
                verdicts += 1
                verdict_ok += got["verdict"] == "fails"
            elif case.tokens:
                verdicts += 1
                verdict_ok += got["verdict"] != "fails"
                err = 100 * (got["tokens"] - case.tokens) / case.tokens
                errors.append(err)
                within += abs(err) <= 3
            print(
                f"  [{mode:8}] {case.name:48} P {got['p']:7.2f} (log {case.p:7.2f})  W {got['w']:7.2f} "
                f"(log {case.w:7.2f})  tokens {got['tokens']:>9} (log {case.tokens})  {got['verdict']}"
            )
        med = statistics.median(abs(e) for e in errors) if errors else float("nan")
        print(
            f"{mode}: {within} of {len(errors)} token counts within 3% (median |error| {med:.1f}%), "
            f"{verdict_ok} of {verdicts} verdicts right; weights error median "
            f"{statistics.median(abs(e) for e in w_err):.1f}% (range {min(w_err):+.1f}..{max(w_err):+.1f}%); "
            f"P error range {min(p_err):+.2f}..{max(p_err):+.2f} GiB\n"
        )


if __name__ == "__main__":
    main()
