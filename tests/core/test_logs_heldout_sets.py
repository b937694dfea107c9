"""Every label of the held-out sets (tests/fixtures/logs/heldout/, README there): `sgtui explain`'s
outcome, error class, milestones, facts and failure phase for 211 real logs, scored the way
../shared/logs/manifest.json is. The checks that still disagree are listed with why; any other disagreement
(a regression) or any of these starting to agree (then take it out of KNOWN) fails."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sgtui.core.logs import classify_text

HELDOUT = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "heldout"
SETS = sorted(p.name for p in HELDOUT.iterdir() if (p / "labels.json").is_file())

# (set, file, check) -> why it still disagrees
KNOWN = {
    ("evalD", "002.log", "phase"): "a warm-up crash in the event loop: the issue says frames -> running",
    (
        "evalG",
        "002.log",
        "phase",
    ): "a rank-less native error among ranks' capture lines: the slowest's",
    ("evalG", "012.log", "outcome"): "a launch command but no server_args: unknown vs starting (judgement)",
    ("evalG", "015.log", "outcome"): "a traceback cut before any header or exception line (judgement)",
    ("evalG", "015.log", "error_class"): "(the same cut traceback)",
    ("evalG", "015.log", "phase"): "(the same cut traceback)",
    ("evalG", "017.log", "phase"): "a frame pasted after prose on the same line",
    ("evalH", "003.log", "error_class"): "a model-specific print before a cut traceback (MiniCPMV only)",
    ("evalH", "004.log", "phase"): "the quantization message has no step of its own",
    ("evalH", "012.log", "phase"): "a 0.3 torch.compile chain with no capture frame",
    (
        "evalI",
        "006.log",
        "phase",
    ): "Mooncake's setup after max_total_num_tokens (judgement)",
    ("evalM", "009.log", "milestone kv_cache_allocated"): "an author-shortened KV line",
    ("evalM", "009.log", "fact kv_tokens"): "(the same shortened line)",
    ("evalM", "009.log", "fact k_size_gib"): "(the same shortened line)",
    ("evalM", "009.log", "fact v_size_gib"): "(the same shortened line)",
    ("evalN", "014.log", "phase"): "a log pasted newest-first with SGLang's own stamps is read forwards",
}


def _checks(label: dict[str, Any], got: dict[str, Any]) -> dict[str, bool]:
    out = {"outcome": got["outcome"] == label.get("outcome")}
    accept = label.get("error_class_accept") or [label.get("error_class")]
    out["error_class"] = got["error_class"] in accept
    kinds = [m["kind"] for m in got["milestones"]]
    for kind in label.get("milestones") or []:
        out[f"milestone {kind}"] = kind in kinds
    for name, want in (label.get("facts") or {}).items():
        value = got["facts"].get(name)
        if isinstance(want, float) and isinstance(value, int | float):
            out[f"fact {name}"] = abs(value - want) < 0.011
        else:
            out[f"fact {name}"] = value == want
    if label.get("phase"):
        out["phase"] = (got.get("error") or {}).get("phase") == label["phase"]
    return out


@pytest.mark.parametrize("name", SETS)
def test_every_label_of_a_held_out_set_agrees_but_the_known_ones(name: str) -> None:
    labels = json.loads((HELDOUT / name / "labels.json").read_text(encoding="utf-8"))
    disagree: set[tuple[str, str, str]] = set()
    for file, label in labels.items():
        got = classify_text((HELDOUT / name / file).read_text(encoding="utf-8")).to_json()
        disagree |= {(name, file, check) for check, ok in _checks(label, got).items() if not ok}
    known = {key for key in KNOWN if key[0] == name}
    assert sorted(disagree - known) == [], "new disagreements"
    assert sorted(known - disagree) == [], "these agree now: take them out of KNOWN"


def test_every_held_out_log_has_a_label_and_a_source() -> None:
    for name in SETS:
        labels = json.loads((HELDOUT / name / "labels.json").read_text(encoding="utf-8"))
        logs = sorted(p.name for p in (HELDOUT / name).glob("*.log"))
        assert logs == sorted(labels), name
        for log in logs:
            assert (HELDOUT / name / log).read_text(encoding="utf-8").startswith("# source"), (name, log)
