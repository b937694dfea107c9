"""The simulated host's own ports: each port a profile asks for maps to a free port this sim owns.

A profile says `port: 30000`, as it would on a real host, but two sims (or a sim and a real server) on one
machine must never fight over 127.0.0.1:30000. So every sim keeps `ports.json` in its state dir: the
first time a port is asked for, a free loopback port is picked and recorded, and from then on the
stand-in binds that one and the sim's SSH server forwards direct-tcpip connections for the asked port
to it. The stand-in's log still names the asked port, as SGLang would. A scenario's busy port (an old
server that never died) is held on the mapped port, so the clash happens inside this sim only.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import socket
from collections.abc import Iterator

PORTS_FILE = "ports.json"
LOCK_FILE = "ports.lock"


class PortMap:
    """Asked port -> the sim's own port, kept in `<state_dir>/ports.json` under a file lock."""

    def __init__(self, state_dir: str | os.PathLike[str]) -> None:
        self.dir = os.fspath(state_dir)
        self.path = os.path.join(self.dir, PORTS_FILE)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, int]]:
        with open(os.path.join(self.dir, LOCK_FILE), "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                try:
                    with open(self.path) as fh:
                        table = {str(k): int(v) for k, v in json.load(fh).items()}
                except (OSError, ValueError):
                    table = {}
                yield table
                tmp = self.path + ".tmp"
                with open(tmp, "w") as fh:
                    json.dump(table, fh)
                os.replace(tmp, self.path)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def resolve(self, asked: int) -> int:
        """The sim's port for `asked`, picking a free one the first time."""
        with self._locked() as table:
            if str(asked) not in table:
                table[str(asked)] = _free_port()
            return table[str(asked)]

    def lookup(self, asked: int) -> int | None:
        """The sim's port for `asked` if one was ever picked (the SSH server's forwarding asks this)."""
        try:
            with open(self.path) as fh:
                value = json.load(fh).get(str(asked))
        except (OSError, ValueError):
            return None
        return int(value) if isinstance(value, int) else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@functools.cache
def is_own_address(host: str) -> bool:
    """An address of this machine's own interfaces (it can be bound). The sim's pct containers share the
    host's network namespace, so `hostname -I` inside one names the machine's own addresses: a server
    there is reached at them as on loopback (a real container has its own namespace and address)."""
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.bind((host, 0))
    except (OSError, ValueError):
        return False
    return True
