"""The one exception type that means "the user's input is wrong".

The CLI prints such an error as one line and exits with code 2; the UI shows it beside the field it
concerns. Anything else escaping is a bug.
"""

from __future__ import annotations


class UserError(Exception):
    """Bad input: the message names the file/line/flag and says what to do."""
