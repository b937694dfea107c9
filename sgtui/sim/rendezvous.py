"""Where the SGLang stand-in's nodes meet: a small TCP store at `--dist-init-addr`, as torch.distributed's.

SGLang (multi-node) calls `init_process_group(init_method="tcp://DIST_INIT_ADDR", world_size=tp*pp,
rank=...)`: global rank 0, on node 0, serves a TCPStore on that port; every rank on every node connects to
it (retrying until it answers, for as long as the timeout allows) and waits until all `world_size` ranks
have joined. So a node that is not started, or that dials a wrong address, makes every other node wait in
"Init torch distributed begin." until the timeout, after which torch raises on each side. This module does
the same over real TCP: node 0 serves, each rank connects (from its host's own address), `go` comes once
the world is complete.
"""

from __future__ import annotations

import contextlib
import errno
import socket
import threading
import time
from dataclasses import dataclass, field

RETRY_S = 1.0  # torch's TCPStore client retries the connect about once a second


class DistInitError(Exception):
    """Distributed init failed: `text` is the error as torch prints it."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def parse_addr(text: str) -> tuple[str, int]:
    """`HOST:PORT` (IPv6 in brackets) -> (host, port); ValueError when it is not one."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ValueError(f"--dist-init-addr {text!r}: expected HOST:PORT")
    return host.strip("[]"), int(port)


@dataclass
class Store:
    """Node 0's store: accepts ranks until `world` have joined, then tells each of them to go."""

    address: tuple[str, int]
    world: int
    sock: socket.socket = field(init=False)
    joined: dict[int, socket.socket] = field(default_factory=dict)
    complete: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("", self.address[1]))  # TCPStore listens on every interface
            sock.listen(64)
        except OSError as exc:
            sock.close()
            name = errno.errorcode.get(exc.errno or 0, "E?")
            raise DistInitError(
                "torch.distributed.DistNetworkError: The server socket has failed to listen on any local "
                f"network address. port: {self.address[1]}, useIpv6: false, code: -{exc.errno}, name: "
                f"{name}, message: {(exc.strerror or '').lower()}"
            ) from None
        self.sock = sock
        threading.Thread(target=self._serve, name="tcpstore", daemon=True).start()

    def _serve(self) -> None:
        while len(self.joined) < self.world:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._register, args=(conn,), daemon=True).start()

    def _register(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError, ValueError):
            line = conn.makefile("r").readline()
            rank = int(line.split()[1])
            self.joined[rank] = conn
            if len(self.joined) >= self.world:
                for peer in list(self.joined.values()):
                    with contextlib.suppress(OSError):
                        peer.sendall(b"go\n")
                self.complete.set()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


def join(
    addr: tuple[str, int], rank: int, own_address: str | None, timeout: float, started: float
) -> socket.socket:
    """Connect rank `rank` to the store (retrying) and wait for `go`; DistInitError after `timeout` s.
    The connection is kept open for the life of the run, as the process group's store is."""
    deadline = started + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise DistInitError(
                "torch.distributed.DistNetworkError: The client socket has timed out after "
                f"{int(timeout * 1000)}ms while trying to connect to ({addr[0]}, {addr[1]})."
            )
        try:
            source = (own_address, 0) if own_address else None
            conn = socket.create_connection(addr, timeout=min(left, RETRY_S), source_address=source)
        except OSError:
            time.sleep(min(RETRY_S, max(deadline - time.monotonic(), 0)))
            continue
        conn.settimeout(None)
        conn.sendall(f"rank {rank}\n".encode())
        conn.settimeout(max(deadline - time.monotonic(), 0.01))
        try:
            reply = conn.makefile("r").readline()
        except OSError:
            reply = ""
        if reply.strip() == "go":
            conn.settimeout(None)
            return conn
        conn.close()
        raise DistInitError(
            f"torch.distributed.DistStoreError: Timed out after {int(timeout) + 1} seconds waiting for "
            "clients. Not every rank joined the store"
        )


def hang_forever() -> None:
    """A rank whose transport never reaches the store (wrong interface): it just waits."""
    while True:
        time.sleep(3600)


DEFAULT_TIMEOUT_S = 600.0  # torch's default process-group timeout for NCCL (SGLang's --dist-timeout unset)


class Meeting:
    """One node's part in distributed init, for the stand-in: serve the store on node 0, join every local
    rank, return once the whole world is in (DistInitError on timeout or a port that cannot be served)."""

    def __init__(self, state: dict[str, object], speed: float) -> None:
        self.own_address = str(state.get("address") or "127.0.0.1")
        self.hang = bool(state.get("dist_init_hang"))
        self.speed = speed
        self.store: Store | None = None
        self.conns: list[socket.socket] = []

    def meet(self, values: dict[str, object], port: int, ranks: list[int], world: int) -> None:
        node_rank = int(str(values.get("--node-rank") or 0))
        given = values.get("--dist-init-addr")
        # without --dist-init-addr every node uses its own loopback, so the nodes never meet
        host, dist_port = parse_addr(str(given)) if given else (self.own_address, port + 233)
        timeout = float(str(values.get("--dist-timeout") or DEFAULT_TIMEOUT_S)) / self.speed
        started = time.monotonic()
        if node_rank == 0:
            self.store = Store((host, dist_port), world)
        if self.hang:
            hang_forever()
        errors: list[DistInitError] = []

        def one(rank: int) -> None:
            try:
                self.conns.append(join((host, dist_port), rank, self.own_address, timeout, started))
            except DistInitError as exc:
                errors.append(exc)

        threads = [threading.Thread(target=one, args=(r,), daemon=True) for r in ranks]
        for thread in threads:
            thread.start()
        while any(t.is_alive() for t in threads):
            time.sleep(0.05)  # the main thread stays interruptible: SIGTERM unwinds from here
        if errors:
            raise errors[0]
