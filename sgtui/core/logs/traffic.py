"""What request traffic says about a launch: the first batch (the server runs batches: the warm-up's or
requests'), the first decode batch or OpenAI answer (requests are served), the first answered POST after
Uvicorn starts (ready, even in versions that never print "fired up and ready to roll")."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from sgtui.core.logs.prefix import split_prefix
from sgtui.core.logs.state import ANSWERED, SERVED, parse_seconds

if TYPE_CHECKING:
    from sgtui.core.logs.classifier import LogClassifier
    from sgtui.core.logs.state import LogEvent, StartupState


_WAITING = re.compile(r"#running-req: (\d+), #queue-req: (\d+)")


def busy_batch(raw: str) -> bool:
    """A prefill that cannot be the warm-up's: others already running or queued. The warm-up posts one request
    per DP rank at once (http_server._execute_server_warmup), so its prefill shows `#running-req: 0,
    #queue-req: 0`; a client's request may slip in beside it (one running), never a crowd."""
    m = _WAITING.search(raw)
    return m is not None and (int(m.group(1)) >= 2 or int(m.group(2)) >= 1)


# Endpoints only a serving engine answers: RL frameworks (slime, verl, AReaL) drive SGLang through them.
_CONTROL = (
    "/abort_request",
    "/flush_cache",
    "/update_weights",
    "/release_memory_occupation",
    "/resume_memory",
)


def served_request(raw: str, state: StartupState) -> bool:
    """An answered request (200) that is no warm-up: a client's OpenAI request (the warm-up posts
    /generate), a control endpoint, or any POST in a tail that shows no startup at all."""
    return "POST /v1/" in raw or any(c in raw for c in _CONTROL) or ("POST " in raw and not state.milestones)


def first_batch(c: LogClassifier, raw: str, n: int, events: list[LogEvent]) -> None:
    c.batches_seen = True
    time = split_prefix(raw)[0]
    c.phases.advance("serving", n, time, parse_seconds(time), events)


def first_decode(c: LogClassifier, raw: str, n: int, events: list[LogEvent]) -> None:
    """SGLang logs a decode batch every --decode-log-interval (40) steps: the warm-up's few tokens never reach
    one, so a "Decode batch" line is requests being served (a pasted tail may show nothing else)."""
    c.decoding = True
    if not c.batches_seen:
        first_batch(c, raw, n, events)
    if "ready" not in c.state.milestones and ANSWERED not in c.state.notes:
        c.state.notes.add(SERVED)
        time = split_prefix(raw)[0]
        c.phases.advance("ready", n, time, parse_seconds(time), events)


def first_answer(c: LogClassifier, raw: str, n: int, events: list[LogEvent]) -> None:
    """The server answered a request (the warm-up's or a client's): it serves, even in versions that never
    print "fired up and ready to roll"."""
    c.awaiting_first_answer = False
    if "ready" not in c.state.milestones:
        c.state.notes.add(ANSWERED)
        time, _, _ = split_prefix(raw)
        c.phases.advance("ready", n, time, parse_seconds(time), events)
