"""What `sgtui explain` reads: a log as written, or as logrotate left it (gzip, bzip2, xz, told by their
magic bytes, not the name), never a binary file read as a log that says nothing."""

from __future__ import annotations

import bz2
import gzip
import lzma
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

from sgtui.core.errors import UserError

PIECE = 64 * 1024  # decompressed piece by piece: a cut file keeps all but its last piece
PROBE = 64 * 1024  # the start a binary file is told by
# (magic, opener, the name users know it by)
COMPRESSED: tuple[tuple[bytes, Any, str], ...] = (
    (b"\x1f\x8b", lambda raw: gzip.GzipFile(fileobj=raw), "gzip"),
    (b"BZh", bz2.BZ2File, "bzip2"),
    (b"\xfd7zXZ\x00", lzma.LZMAFile, "xz"),
)
# bytes no text log holds (NUL aside: a log a crash cut can hold a run of zeros); tab, LF, CR, ESC are text
_BINARY = bytes(b for b in range(32) if b not in (0, 9, 10, 13, 27))
BINARY_SHARE = 0.10


@contextmanager
def checked_log(raw: IO[bytes], name: str) -> Iterator[IO[bytes]]:
    """`raw` as a stream of the log's own bytes: decompressed into a temporary file when it is compressed
    (the analysis seeks, and a compressed stream seeks backwards only by starting over)."""
    head = _peek(raw)
    for magic, opener, kind in COMPRESSED:
        if head.startswith(magic):
            with tempfile.TemporaryFile() as spool:
                try:
                    with opener(raw) as plain:
                        while block := plain.read(PIECE):
                            spool.write(block)
                except EOFError:  # cut short (copied while being written): what came before is the log
                    if not spool.tell():
                        raise UserError(f"{name}: a {kind} file that ends before any of its data") from None
                    print(
                        f"sgtui explain: {name}: the {kind} data ends early (a cut copy?); reading the "
                        f"{spool.tell():,} bytes before the cut",
                        file=sys.stderr,
                    )
                except (OSError, lzma.LZMAError) as exc:
                    raise UserError(f"{name}: a {kind} file that cannot be decompressed ({exc})") from None
                spool.seek(0)
                _refuse_binary(spool.read(PROBE), name)
                spool.seek(0)
                yield spool
            return
    _refuse_binary(head, name)
    yield raw


def _peek(raw: IO[bytes]) -> bytes:
    """The first bytes without consuming them: a file seeks back; a pipe's buffer is peeked."""
    if raw.seekable():
        head = raw.read(PROBE)
        raw.seek(0)
        return head
    peek = getattr(raw, "peek", None)
    return peek(PROBE)[:PROBE] if peek is not None else b""


def _refuse_binary(head: bytes, name: str) -> None:
    if not head:
        return
    odd = sum(head.count(bytes([b])) for b in _BINARY)
    text = head.decode("utf-8", errors="replace")
    odd += text.count("\ufffd")
    if odd > BINARY_SHARE * len(text):
        raise UserError(
            f"{name} is not a text log ({odd} of its first {len(head)} bytes are neither text nor UTF-8); "
            "give the server's log file (its stdout and stderr, as `sgtui launch` writes it)"
        )
