"""The runs being followed at once, and which one the views show."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from sgtui.ui.session.run import NOTIFIED, RunSession, rank_of
from sgtui.ui.views import RunView

MAX_FOLLOWED = 16  # beyond this the oldest ended run is let go (each keeps up to max_lines of log)


class FollowedRuns:
    def __init__(self, limit: int = MAX_FOLLOWED) -> None:
        self.limit = limit
        self._sessions: dict[str, RunSession] = {}
        self.viewed: str | None = None
        self._announced: set[tuple[str, str]] = set()

    def __iter__(self) -> Iterator[RunSession]:
        return iter(list(self._sessions.values()))

    def __len__(self) -> int:
        return len(self._sessions)

    def __contains__(self, key: object) -> bool:
        return key in self._sessions

    def get(self, key: str) -> RunSession | None:
        return self._sessions.get(key)

    def note_of(self, run: RunView) -> str:
        """The host's note on why a run is in its state: from its listing, else from its follower's end."""
        session = self._sessions.get(run.run_id)
        node = session.nodes.get(run.node_rank or 0) if session is not None else None
        return run.note or (node.note if node is not None else "")

    def unlisted(self, before: list[RunView], listed: list[RunView]) -> list[tuple[RunSession, int, RunView]]:
        """The followed nodes a target's previous listing (`before`) had and its new one lacks (their run
        dir was removed): (session, rank, row kept from the record in hand, with its state as the session
        knows it once it ended, and its note)."""
        now = {(r.run_id, rank_of(r)) for r in listed}
        kept = []
        for row in before:
            session = self._sessions.get(row.run_id)
            rank = rank_of(row)
            if session is None or rank not in session.nodes or (row.run_id, rank) in now or row.foreign:
                continue
            node = session.nodes[rank]
            state = row.state if session.alive else session.state
            kept.append((session, rank, dataclasses.replace(row, state=state, note=node.note or row.note)))
        return kept

    def add(self, session: RunSession) -> list[RunSession]:
        """Follow `session` (replacing one with the same key); returns the sessions let go to stay
        within the limit: ended ones first, never the one in view."""
        self._sessions[session.key] = session
        gone: list[RunSession] = []
        while len(self._sessions) > self.limit:
            candidates = [s for s in self._sessions.values() if s.key not in (self.viewed, session.key)]
            victim = next((s for s in candidates if not s.alive), candidates[0] if candidates else None)
            if victim is None:
                break
            gone.append(self._sessions.pop(victim.key))
        return gone

    def remove(self, key: str) -> RunSession | None:
        if self.viewed == key:
            self.viewed = None
        session = self._sessions.pop(key, None)
        if session is not None:
            session.in_view = False
        return session

    @property
    def in_view(self) -> RunSession | None:
        return self._sessions.get(self.viewed) if self.viewed else None

    def view(self, key: str) -> RunSession | None:
        session = self._sessions.get(key)
        if session is not None:
            before = self.in_view
            if before is not None:
                before.in_view = False
            self.viewed = key
            session.unseen = None
            session.in_view = True
        return session

    def step(self, delta: int) -> RunSession | None:
        """The next (or previous) followed run after the one in view, wrapping around."""
        keys = list(self._sessions)
        if not keys:
            return None
        at = keys.index(self.viewed) if self.viewed in keys else -1
        return self.view(keys[(at + delta) % len(keys)])

    def on_host(self, host: str) -> list[RunSession]:
        return [s for s in self._sessions.values() if host in s.hosts]

    def changed_out_of_view(self, session: RunSession, state: str) -> bool:
        """True once per (run, state) for a run not in view whose new state deserves a notification; the
        run's row is marked until it is viewed."""
        if session.key == self.viewed or state not in NOTIFIED:
            return False
        session.unseen = state
        if (session.key, state) in self._announced:
            return False
        self._announced.add((session.key, state))
        return True
