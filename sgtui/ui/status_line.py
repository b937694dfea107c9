"""The line under the header, on every tab, and what "stale" means for a live value.

Target, connection, SGLang version, the fit's verdict and the run in view; a value unconfirmed past a few
missed samples on a live link reads "ready, last seen 35s ago". The same rule marks a live run's health
in the fleet rows and the runs table (`run_silence`), from the ages the state objects keep
(`session/ages.py`). Text, never markup: every piece is outside text (host names, run ids, remote words).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text

from sgtui.ui.session.ages import age_text
from sgtui.ui.session.fleet import ALIVE_STATES
from sgtui.ui.widgets.fit_panel import fit_badge

if TYPE_CHECKING:
    from sgtui.ui.app import SgtuiApp
    from sgtui.ui.session.run import RunSession
    from sgtui.ui.views import RunView

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


def run_silence(host: Any, session: RunSession | None, now: float) -> float | None:
    """How long a live run's health has gone unconfirmed while its host is lost or silent past a few
    missed samples; None while the host answers (what is shown is live). A followed run was last heard
    from its log or its state; any other run at its host's last runs listing."""
    if host is None or (host.state == "connected" and host_silence(host, now) is None):
        return None
    if session is not None:
        heard = [session.ages.age("log", now), session.ages.age("state", now)]
    else:
        heard = [host.ages.age("runs", now)]
    ages = [a for a in heard if a is not None]
    return min(ages) if ages else None


def runs_silence(app: SgtuiApp, runs: list[RunView], now: float) -> dict[str, float]:
    """Row key (`RunView.row_key`) -> how long each live run's health has gone unconfirmed, for the runs
    that `run_silence` marks stale."""
    out: dict[str, float] = {}
    for run in runs:
        if app.state_of(run) not in ALIVE_STATES or run.host not in app.fleet:
            continue
        age = run_silence(app.fleet.host(run.host), app.followed.get(run.run_id), now)
        if age is not None:
            out[run.row_key] = age
    return out


def host_runs_silence(app: SgtuiApp, name: str) -> float | None:
    """For a fleet row: the freshest age among the host's live runs when their health is stale (a frozen
    link), else None."""
    ages = runs_silence(app, app.fleet.host(name).runs, app.clock()).values()
    return min(ages) if ages else None


# what a narrow terminal drops first, so that the run's state and its stale mark stay on the line: the
# version (the header's sub-title names the flag table's), the followed count, the launch hint, then the
# host's age (the host stays marked stale; the run's "last seen" says how long)
OPTIONAL = ("version", "followed", "hint", "host-age")


def status_line(app: SgtuiApp, host: Any, state: str, width: int | None = None) -> Text:
    """Each live value with its age once stale; with `width`, the pieces in `OPTIONAL` are dropped (in
    that order) until the rest fits; what still does not (a long note) is cut with an ellipsis."""
    d = app.deployment
    now = app.clock()
    parts: list[tuple[str, Text]] = [("", Text(f"{d.host} › {d.target_label} · "))]
    silent = host_silence(host, now)
    # the run's own stale mark below says it too: a narrow line keeps the host marked, without its age
    parts.append(("host-age" if silent is not None else "", stale_text(state, silent)))
    parts.append(("version", Text(f" · SGLang {d.version}" if d.version else " · SGLang ?")))
    parts.append(("", Text(" · fit ").append_text(fit_badge(d.fit_report, app.flags.fit_error))))
    session = app.session
    if session is not None:
        shown = session.phase if session.state == "starting" and session.phase else session.state
        silence = run_silence(app.fleet.host(session.host), session, now) if session.alive else None
        parts.append(("", Text(f" · run {session.key} ").append_text(stale_text(shown, silence))))
        if len(app.followed) > 1:
            keys = [s.key for s in app.followed]
            parts.append(("followed", Text(f" · {keys.index(session.key) + 1}/{len(keys)} followed ([ ])")))
    else:
        parts.append(("", Text(" · no run followed")))
        parts.append(("hint", Text(": l launches")))
    if app.readonly:
        parts.append(("", Text(" · read-only", style="bold")))
    if session is not None and session.note:  # in `sgtui runs`'s words; whole in the side panel
        parts.append(("", Text(" · ").append(session.note, style="yellow")))
    short = {"host-age": Text(state, style="bold yellow")}  # what a dropped piece leaves, if anything
    for name in OPTIONAL:
        if width is None or sum(t.cell_len for _, t in parts) <= width:
            break
        parts = [
            (n, short[n]) if n == name and n in short else (n, t) for n, t in parts if n != name or n in short
        ]
    text = Text(no_wrap=True, overflow="ellipsis")
    for _, piece in parts:
        text.append_text(piece)
    return text
