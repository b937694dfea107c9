"""The events of `sgtui launch` (single and multi-node): text lines or JSON objects on stdout, one per
event, flushed as they happen; the preflight's event comes first (DESIGN.md "Exit codes and preflight")."""

from __future__ import annotations

import json
import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sgtui.core.logs import LogEvent
    from sgtui.core.preflight import Preflight


class Printer:
    """Text lines or JSON objects on stdout, one per event, flushed as they happen."""

    def __init__(self, json_events: bool, out: Any = None) -> None:
        self.json = json_events
        self.out = out or sys.stdout
        self.t0 = time.monotonic()

    def elapsed(self) -> float:
        return round(time.monotonic() - self.t0, 1)

    def emit(self, event: str, human: str, /, **data: Any) -> None:
        """`human` is the text line; `data` the JSON object's fields besides `event` and `elapsed`."""
        if self.json:
            line = json.dumps({"event": event, "elapsed": self.elapsed(), **data}, default=str)
        else:
            line = f"[{self.elapsed():7.1f}s] {human}"
        print(line, file=self.out, flush=True)

    def preflight(self, pre: Preflight, report: Any = None) -> None:
        """The `preflight` event (first, DESIGN.md): the verdict, the predicted error, the first fix that
        fits and one line per check."""
        from sgtui.core.preflight import check_lines, fix_text

        lines = [f"preflight: {pre.verdict.upper()}" + (f": {pre.error}" if pre.error else "")]
        first = report.first_fix() if report is not None else None
        if pre.fix is not None:
            kind = {"fits": "first fix that fits", "tight": "first fix (tight)"}.get(
                first.verdict if first is not None else "", "suggested fix"
            )
            why = f"  ({first.why})" if first is not None and first.why else ""
            lines.append(f"  {kind}: {fix_text(pre.fix)}{why}")
        lines.extend(f"  {line}" for line in check_lines(pre))
        event = pre.to_event()
        del event["event"]
        self.emit("preflight", "\n".join(lines), **event)

    def go_ahead(self, pre: Preflight, *, force: bool) -> bool:
        """True when the launch goes ahead (nothing blocks, or `force`); else says why not."""
        from sgtui.core.preflight import block_reason, fix_text

        if not pre.blocks:
            return True
        why = block_reason(pre)
        if force:
            self.emit("forced", f"--force: launching although {why}", reason=why)
            return True
        fix = f"; try {fix_text(pre.fix)}" if pre.fix is not None and pre.verdict == "fails" else ""
        self.emit("not_launched", f"not launched: {why}{fix} (--force launches anyway)", reason=why)
        return False

    def milestone(self, event: LogEvent, where: str = "", /, **data: Any) -> None:
        """A startup milestone as `WHERE` `kind [rank]  key=value ...`; the JSON object carries the kind, the
        log line, the rank tag and the values, then `data` (a multi-node watch adds the node)."""
        values = " ".join(f"{k}={v}" for k, v in event.values.items())
        rank = f" [{event.rank}]" if event.rank else ""
        self.emit(
            "milestone",
            f"{where}{event.kind}{rank}" + (f"  {values}" if values else ""),
            kind=event.kind,
            line=event.line,
            rank=event.rank,
            values=event.values,
            **data,
        )

    def diagnosis(self, item: Any, where: str = "", /, **data: Any) -> None:
        """A diagnosis as its title, its detail lines and a `try:` line per suggested change (`also:` for
        advice without a flag); the JSON object carries the diagnosis's fields, then `data`."""
        from dataclasses import asdict

        lines = [
            f"diagnosis{where}: {item.title}",
            *("  " + d for d in item.detail.splitlines() if d.strip()),
        ]
        for s in item.suggestions:
            change = " ".join(x for x in (s.flag, s.value) if x)
            lines.append(f"  try: {change}  ({s.why})" if change else f"  also: {s.why}")
        self.emit("diagnosis", "\n".join(lines), **data, **asdict(item))
