"""The serving view of the followed run (beside its log, above the timeline, once the run is ready):
tokens/s, running and queued requests and KV usage, each a sparkline on a fixed scale with its number;
the source and age of the numbers; TTFT/ITL; the smoke request; warnings naming the flag that gives the KV
pool more room; the load probe's progress or last report next to the predicted max_running_requests and KV
tokens. Text only, never markup (numbers and error text from the host)."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widget import Widget

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


def _sizes(session: RunSession) -> list[tuple[str, Any, Any]]:
    """(label, as the log says, as the fit predicted) for max_running_requests and the KV tokens."""
    predicted = session.predicted or {}
    node = session.nodes.get(0)
    facts = node.tracker.state.facts if node is not None else {}
    return [
        ("max running req", facts.get("max_running_requests"), predicted.get("max_running_requests")),
        ("KV tokens", facts.get("max_total_num_tokens"), predicted.get("max_total_num_tokens")),
    ]


def _count(x: Any) -> str:
    if not isinstance(x, int | float):
        return "?"
    return f"{int(x):,}" if x > 0 else "none"


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
        w = max(6, width - 15)
        n = len(s.history.snapshots)
        (_, actual_mrr, predicted_mrr), _kv = _sizes(session)
        top = s.tokens_scale
        scale = s.requests_scale(actual_mrr if actual_mrr is not None else predicted_mrr)

        def row(label: str, value: str, attr: str, top: float, style: str) -> None:
            text.append(f"{label:<7}{value:>7} ")
            text.append(spark(s.history.series(attr, n), top, w), style=style)
            text.append("\n")

        def num(x: float | None, fmt: str = "{:,.0f}") -> str:
            return "-" if x is None else fmt.format(x)

        row("tok/s", num(snap.gen_tokens_per_s), "gen_tokens_per_s", top, "cyan")
        row("running", num(snap.running), "running", scale, "green")
        row("queued", num(snap.queued), "queued", scale, "yellow")
        kv_style = "bold red" if (snap.kv_usage or 0) >= 0.95 else "magenta"
        row(
            "KV",
            num(None if snap.kv_usage is None else 100 * snap.kv_usage, "{:.0f}%"),
            "kv_usage",
            1.0,
            kv_style,
        )
        text.append(f"scale {top:,.0f} tok/s, {scale} req\n", style="dim")
        if snap.ttft_ms.p50 is not None:
            text.append(f"TTFT {_ms(snap.ttft_ms)} ms p50/p99\n", style="dim")
        if snap.itl_ms.p50 is not None:
            text.append(f"ITL  {_ms(snap.itl_ms)} ms\n", style="dim")
        if snap.spec_accept_length is not None:
            text.append(f"accept length {snap.spec_accept_length:.2f}\n", style="dim")
        if s.note:
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
        text.append(f"probe {b.done}/{b.total} · esc cancels\n", style="bold cyan")
    elif b.error:
        text.append(f"load probe: {b.error}\n", style="bold red")
    r = s.report
    if r is not None:
        rate = "-" if r.output_tokens_per_s is None else f"{r.output_tokens_per_s:,.0f}"
        text.append(f"last probe {r.completed}/{r.requests} c={r.concurrency or '?'} {r.tool}\n")
        text.append(f"  {rate} out tok/s\n  TTFT {_ms(r.ttft_ms)} ITL {_ms(r.itl_ms)} ms\n", style="dim")
    if r is not None or b.running:
        for label, actual, predicted in _sizes(session):
            text.append(f"  {label} {_count(actual)}", style="dim")
            text.append(f" (fit {_count(predicted)})\n" if predicted is not None else "\n", style="dim")
    else:
        text.append("b: load probe", style="dim")
    return text


class ServingPanel(Widget):
    DEFAULT_CSS = """
    ServingPanel { height: auto; margin-bottom: 1; }
    ServingPanel.-hidden { display: none; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.session: RunSession | None = None
        self.now = 0.0
        self.add_class("-hidden")

    def show(self, session: RunSession | None, now: float) -> None:
        self.session, self.now = session, now
        visible = session is not None and session.serving.shown
        self.set_class(not visible, "-hidden")
        if visible:
            self.refresh(layout=True)

    def render(self) -> Text:
        if self.session is None or not self.session.serving.shown:
            return Text()
        return serving_text(self.session, self.now, self.content_size.width or 28)
