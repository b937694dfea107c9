"""The compiled prefilter (one Aho-Corasick pass, core/logs/prefilter.py) changes nothing but speed: on every
real log in the repo and in ../shared/logs, and on the corpora bench/bench_explain_shapes.py times,
`sgtui explain --json` prints byte for byte what it prints with the chain of `in` tests it replaced."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sgtui.cli import main
from sgtui.core.logs import prefilter

ROOT = Path(__file__).resolve().parents[1]
SHARED_LOGS = ROOT.parent / "shared" / "logs"
sys.path.insert(0, str(ROOT / "bench"))


def _logs() -> list[Path]:
    logs = sorted((ROOT / "tests" / "fixtures" / "logs").rglob("*.log"))
    if SHARED_LOGS.is_dir():
        logs += sorted(SHARED_LOGS.glob("*.log"))
    return logs


def _explain(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["explain", str(path), "--json"]) == 0
    return capsys.readouterr().out


def _both(path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    compiled = _explain(path, capsys)
    with monkeypatch.context() as patch:
        patch.setattr(prefilter, "_ANY_ANCHOR", prefilter.any_anchor_chain)
        chained = _explain(path, capsys)
    return compiled, chained


def test_the_prefilter_is_the_compiled_automaton() -> None:
    """pyahocorasick is a dependency: the chain is only the fallback (a guard that the speed-up is in use)."""
    assert prefilter._ANY_ANCHOR is not prefilter.any_anchor_chain


def test_every_line_of_every_real_log_gets_the_chains_answer() -> None:
    lines = [line for path in _logs() for line in path.read_text(errors="replace").splitlines()]
    assert len(lines) > (1000 if SHARED_LOGS.is_dir() else 500)  # the repo's own logs alone: ~800 lines
    differ = [line for line in lines if prefilter._ANY_ANCHOR(line) != prefilter.any_anchor_chain(line)]
    assert differ == []


@given(st.lists(st.one_of(st.sampled_from(prefilter.ANCHORS), st.text(max_size=8)), max_size=8))
def test_any_text_gets_the_chains_answer(pieces: list[str]) -> None:
    """Anchors cut by, glued to or overlapping any text (astral characters, surrogates, controls)."""
    text = "".join(pieces)
    assert prefilter._ANY_ANCHOR(text) == prefilter.any_anchor_chain(text)


def test_explain_json_of_every_real_log_is_byte_identical(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    logs = _logs()
    assert len(logs) >= 10
    for path in logs:
        compiled, chained = _both(path, monkeypatch, capsys)
        assert compiled == chained, path


def test_explain_json_of_both_bench_shapes_is_byte_identical(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The bench's corpora at 30,000 lines: every real log concatenated (startup shape), and a 0.5.23 start
    followed by serving lines (serving shape)."""
    from bench_explain_shapes import write_serving, write_startup

    for name, writer in (("startup", write_startup), ("serving", write_serving)):
        path = tmp_path / f"{name}.log"
        writer(path, 30_000)
        compiled, chained = _both(path, monkeypatch, capsys)
        assert compiled == chained, name
