"""The serving view of the followed run (beside its log, above the timeline, once the run is ready):
tokens/s, running and queued requests and KV usage, each a sparkline on a fixed scale with its number;
the source and age of the numbers; TTFT/ITL; the smoke request; warnings naming the flag that gives the KV
pool more room; the load probe's progress or last report next to the predicted max_running_requests and KV
tokens. Text only, never markup (numbers and error text from the host)."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Static

from sgtui.core.ages import age_text
from sgtui.core.serving.state import Percentiles
from sgtui.ui.session.run import RunSession

BLOCKS = " ▁▂▃▄▅▆▇█"
STALE_S = 5.0


def spark(values: list[float], top: float, width: int) -> str:
    """The last `width` values as blocks on the fixed scale 0..top (never the data's own min..max)."""
    values = values[-width:]
    cells = [BLOCKS[min(8, max(0, round(8 * v / top)))] if top > 0 else " " for v in values]
    return "".join(cells).rjust(width)


def _ms(p: Percentiles) -> str:
    def f(x: float | None) -> str:
        return "-" if x is None else f"{x:.0f}" if x >= 10 else f"{x:.1f}"

    return f"{f(p.p50)}/{f(p.p99)}"


def _predicted(session: RunSession) -> tuple[Any, Any]:
    """max_running_requests and KV tokens: the fit's prediction, else what the log said."""
    predicted = session.predicted or {}
    mrr, kv = predicted.get("max_running_requests"), predicted.get("max_total_num_tokens")
    if mrr is None or kv is None:
        node = session.nodes.get(0)
        facts = node.tracker.state.facts if node is not None else {}
        mrr = mrr if mrr is not None else facts.get("max_running_requests")
        kv = kv if kv is not None else facts.get("max_total_num_tokens")
    return mrr, kv


def serving_text(session: RunSession, now: float, width: int) -> Text:
    s = session.serving
    snap = s.latest
    text = Text()
    text.append("Serving", style="bold")
    if snap is not None:
        age = snap.age_s(now)
        text.append(
            f" · {snap.source} · {age_text(age)} ago", style="bold yellow" if age > STALE_S else "dim"
        )
    text.append("\n")
    if snap is None:
        text.append(s.note or "waiting for the first numbers", style="dim")
        text.append("\n")
    else:
        w = max(6, width - 16)
        n = len(s.history.snapshots)
        top = s.tokens_scale
        gen = "-" if snap.gen_tokens_per_s is None else f"{snap.gen_tokens_per_s:,.0f}"
        text.append(f"{'tok/s':<6}{gen:>7} ")
        text.append(spark(s.history.series("gen_tokens_per_s", n), top, w), style="cyan")
        text.append(f"\n{'':<6}{'/' + format(top, ',.0f'):>7}\n", style="dim")
        scale = s.requests_scale(session.predicted)
        run_q = "+".join("-" if x is None else str(x) for x in (snap.running, snap.queued))
        text.append(f"{'run+q':<6}{run_q:>7} ")
        text.append(spark(s.history.series("running", n), scale, w), style="green")
        text.append(f"\n{'queue':<6}{'/' + str(scale):>7} ")
        text.append(spark(s.history.series("queued", n), scale, w), style="yellow")
        kv = "-" if snap.kv_usage is None else f"{100 * snap.kv_usage:.0f}%"
        text.append(f"\n{'KV':<6}{kv:>7} ")
        kv_style = "bold red" if (snap.kv_usage or 0) >= 0.95 else "magenta"
        text.append(spark(s.history.series("kv_usage", n), 1.0, w), style=kv_style)
        text.append("\n")
        if snap.ttft_ms.p50 is not None or snap.itl_ms.p50 is not None:
            text.append(f"TTFT {_ms(snap.ttft_ms)} ITL {_ms(snap.itl_ms)} ms p50/p99\n", style="dim")
        if snap.spec_accept_length is not None:
            text.append(f"accept length {snap.spec_accept_length:.2f}\n", style="dim")
        if s.note and snap.source == "log":
            text.append(s.note + "\n", style="dim")
    if s.smoke is not None:
        if s.smoke.ok and s.smoke.seconds is not None:
            text.append(f"smoke: answers in {s.smoke.seconds:.2f} s\n", style="green")
        else:
            text.append(f"smoke: {s.smoke.error}\n", style="bold red")
    for warning in s.warnings():
        text.append(f"⚠ {warning.message}\n", style="bold yellow")
    text.append_text(_bench_text(session))
    return text


def _bench_text(session: RunSession) -> Text:
    s = session.serving
    text = Text()
    b = s.bench
    if b.running:
        text.append(f"load probe: {b.done}/{b.total} requests (esc cancels)\n", style="bold cyan")
    elif b.error:
        text.append(f"load probe: {b.error}\n", style="bold red")
    r = s.report
    if r is not None:
        rate = "-" if r.output_tokens_per_s is None else f"{r.output_tokens_per_s:,.0f}"
        text.append(f"last probe ({r.tool}): {r.completed}/{r.requests}, c={r.concurrency or '?'}\n")
        text.append(f"  {rate} out tok/s · TTFT {_ms(r.ttft_ms)} · ITL {_ms(r.itl_ms)} ms\n", style="dim")
    mrr, kv = _predicted(session)
    if r is not None or b.running:
        mrr_text = f"{mrr:,}" if isinstance(mrr, int) else "?"
        kv_text = f"{kv:,}" if isinstance(kv, int) else "?"
        text.append(f"  vs max running req {mrr_text} · KV tokens {kv_text}\n", style="dim")
    elif not b.running:
        text.append("b: load probe", style="dim")
    return text


class ServingPanel(Static):
    DEFAULT_CSS = """
    ServingPanel { height: auto; margin-bottom: 1; }
    ServingPanel.-hidden { display: none; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__("", **kwargs)  # type: ignore[arg-type]
        self.session: RunSession | None = None
        self.add_class("-hidden")

    def show(self, session: RunSession | None, now: float) -> None:
        self.session = session
        visible = session is not None and session.serving.shown
        self.set_class(not visible, "-hidden")
        if visible and session is not None:
            self.update(serving_text(session, now, self.size.width or 30))
