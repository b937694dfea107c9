"""What a ready server is doing: its health, a smoke request, and its serving numbers.

Shared shapes (`state.py`) that the remote readers fill, the TUI's serving view renders and
`sgtui status` / `sgtui fleet` print (contracts in DESIGN.md). `prom.py` reads a `/metrics` page (both
name prefixes), `derive.py` turns two scrapes into a snapshot, `loglines.py` reads the same numbers from
SGLang's batch log lines, `history.py` keeps the recent snapshots and their warnings, `bench.py` is a load
probe's report."""

from sgtui.core.serving.state import Percentiles, ServingSnapshot, ServingStatus, SmokeResult

__all__ = ["Percentiles", "ServingSnapshot", "ServingStatus", "SmokeResult"]
