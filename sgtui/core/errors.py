"""The one exception type that means "the user's input is wrong".

The CLI prints such an error as one line and exits with code 2; the UI shows it beside the field it
concerns. Anything else escaping is a bug.
"""

from __future__ import annotations


class UserError(Exception):
    """Bad input: the message names the file/line/flag and says what to do."""


def read_utf8(path: object) -> str:
    """A text file's contents; a file that is not UTF-8 raises UnicodeError saying where (line, column and
    the byte), which the callers put in their own one-line error. OSError as `open` raises it."""
    from pathlib import Path

    data = Path(str(path)).read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise UnicodeError(
            f"not UTF-8 text: byte 0x{data[exc.start]:02x} at line {line}, column {column} (save it as UTF-8)"
        ) from None
