"""`CycleParser`: nvidia-smi's streamed rows -> whole cycles, with no work for what did not change."""

from __future__ import annotations

from sgtui.core.nvsmi import CycleParser

ROWS = b"".join(f"{i}, GPU-{i}, NVIDIA H100 80GB HBM3, 3, 81559, 0\n".encode() for i in range(8))


def test_the_first_cycle_waits_for_close_then_each_cycle_is_whole_at_its_last_row() -> None:
    """The first cycle has no count: it ends when the stream closes it (the output went quiet)."""
    parser = CycleParser()
    assert parser.feed(ROWS) == [] and parser.open_rows
    first = parser.close_cycle()
    assert [r.index for r in first] == list(range(8)) and parser.expected == 8
    half = ROWS.index(b"4, GPU")
    assert parser.feed(ROWS[:half]) == []  # half a cycle, cut inside no line
    assert [len(c) for c in parser.feed(ROWS[half:])] == [8]


def test_an_unchanged_cycle_is_the_same_object_and_a_changed_line_is_parsed_again() -> None:
    """Identity is what lets the fleet skip summarising an unchanged sample."""
    parser = CycleParser()
    parser.feed(ROWS)
    first = parser.close_cycle()
    again = parser.feed(ROWS)
    assert again[0] is first  # the very same bytes: not even split
    changed = ROWS.replace(b"3, GPU-3, NVIDIA H100 80GB HBM3, 3,", b"3, GPU-3, NVIDIA H100 80GB HBM3, 70000,")
    (cycle,) = parser.feed(changed)
    assert cycle is not first and cycle[3].memory_used_mib.value == 70000
    assert cycle[0] is first[0]  # the unchanged lines were not parsed again


def test_a_partial_line_waits_for_its_end_and_stray_lines_are_kept() -> None:
    parser = CycleParser()
    parser.feed(b"welcome to the box\n" + ROWS[:10])
    parser.feed(ROWS[10:])
    assert parser.bad == ["welcome to the box"]
    assert len(parser.close_cycle()) == 8


def test_the_line_cache_stays_bounded() -> None:
    parser = CycleParser(cache_size=16)
    for n in range(200):
        parser.feed(f"0, GPU-0, X, {n}, 100, 0\n".encode())
    assert len(parser._cache) <= 16
