"""What `sgtui explain` reads: a log as written, or as logrotate left it (gzip, bzip2, xz, told by their
magic bytes, not the name), never a binary file read as a log that says nothing."""

from __future__ import annotations

import bz2
import contextlib
import gzip
import lzma
import shutil
import sys
import tempfile
import zlib
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
    """`raw` as a seekable stream of the log's own bytes: a pipe spooled to a temporary file first (the
    analysis seeks; it would spool it anyway), a compressed log decompressed into one."""
    with contextlib.ExitStack() as stack:
        try:
            if not raw.seekable():
                spooled = stack.enter_context(tempfile.TemporaryFile())
                shutil.copyfileobj(raw, spooled, PIECE)
                spooled.seek(0)
                raw = spooled
            start = raw.tell()
            head = raw.read(PROBE)
            raw.seek(start)
        except OSError as exc:
            raise UserError(f"{name}: cannot read it ({exc.strerror or exc})") from None
        for magic, opener, kind in COMPRESSED:
            if head.startswith(magic):
                plain = stack.enter_context(tempfile.TemporaryFile())
                _decompress(raw, opener, kind, plain, name)
                _refuse_binary(plain.read(PROBE), name)
                plain.seek(0)
                yield plain
                return
        _refuse_binary(head, name)
        yield raw


def _decompress(raw: IO[bytes], opener: Any, kind: str, out: IO[bytes], name: str) -> None:
    """Decompress into `out` (left at its start). Data cut short or damaged part way keeps what came
    before, with a warning; nothing readable at all is a UserError."""
    try:
        with opener(raw) as plain:
            while block := plain.read(PIECE):
                out.write(block)
    except (EOFError, OSError, zlib.error, lzma.LZMAError) as exc:
        if not out.tell():
            why = "it ends before any of its data" if isinstance(exc, EOFError) else str(exc)
            raise UserError(f"{name}: a {kind} file that cannot be decompressed ({why})") from None
        how = "ends early (a cut copy?)" if isinstance(exc, EOFError) else f"is damaged ({exc})"
        print(
            f"sgtui explain: {name}: the {kind} data {how}; reading the {out.tell():,} bytes before it",
            file=sys.stderr,
        )
    out.seek(0)


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
