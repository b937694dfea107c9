"""What a ready server is doing: its health, a smoke request, and its serving numbers.

Shared shapes (`state.py`) that the remote readers fill, the TUI's serving view renders and
`sgtui status` / `sgtui fleet` print (contracts in DESIGN.md)."""

from sgtui.core.serving.state import Percentiles, ServingSnapshot, ServingStatus, SmokeResult

__all__ = ["Percentiles", "ServingSnapshot", "ServingStatus", "SmokeResult"]
