"""The line under the header, on every tab, and what "stale" means for a live value.

Target, connection, SGLang version, the fit's verdict and the run in view; a value unconfirmed past a few
missed samples on a live link reads "ready, last seen 35s ago". Text, never markup: every piece is
outside text (host names, run ids, remote words).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text

from sgtui.ui.session.ages import age_text
from sgtui.ui.widgets.fit_panel import fit_badge

if TYPE_CHECKING:
    from sgtui.ui.app import SgtuiApp

GPU_STALE_S = 5.0  # ten missed GPU samples (every 0.5 s): the host's values are marked stale


def stale_text(value: str, age: float | None) -> Text:
    """A live value; with an age, it is stale: "ready, last seen 35s ago", marked."""
    if age is None:
        return Text(value)
    return Text(f"{value}, last seen {age_text(age)} ago", style="bold yellow")


def host_silence(host: Any, now: float) -> float | None:
    """How long a connected host has sent nothing (no GPU sample) past a few missed samples; else None."""
    if host is None or host.state != "connected":
        return None
    age = host.ages.age("gpus", now)
    if age is None:
        age = host.ages.age("state", now)
    return age if age is not None and age > GPU_STALE_S else None


def status_line(app: SgtuiApp, host: Any, state: str) -> Text:
    d = app.deployment
    now = app.clock()
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(f"{d.host} › {d.target_label} · ")
    silent = host_silence(host, now)
    text.append_text(stale_text(state, silent))
    text.append(f" · SGLang {d.version}" if d.version else " · SGLang ?")
    text.append(" · fit ")
    text.append_text(fit_badge(d.fit_report, app.flags.fit_error))
    session = app.session
    if session is not None:
        shown = session.phase if session.state == "starting" and session.phase else session.state
        run_host = app.fleet.host(session.host)
        unsure = session.alive and (run_host.state != "connected" or host_silence(run_host, now) is not None)
        heard = [a for a in (session.ages.age("log", now), session.ages.age("state", now)) if a is not None]
        text.append(f" · run {session.key} ")
        text.append_text(stale_text(shown, min(heard) if unsure and heard else None))
        if len(app.followed) > 1:
            keys = [s.key for s in app.followed]
            text.append(f" · {keys.index(session.key) + 1}/{len(keys)} followed ([ ])")
    else:
        text.append(" · no run followed: l launches")
    if app.readonly:
        text.append(" · read-only", style="bold")
    return text
