"""The command that starts the server, in the form each release prefers (the rule is in windows.py).

0.5.10 onwards: `sglang serve ARGS`, since that release's `python -m sglang.launch_server` warns that it is
"still supported, but 'sglang serve' is the recommended entrypoint" (launch_server.py, `__main__`). Before:
`python -m sglang.launch_server ARGS`, the only form before 0.5.5 and the unwarned one up to 0.5.9.

`sglang` is the console script pip puts beside the environment's interpreter (`sglang = sglang.cli.main:main`
in the wheel's entry_points.txt), so it is found as the profile's `python` with its last path part replaced:
`/opt/venv/bin/python` -> `/opt/venv/bin/sglang`; a bare `python3` (found on PATH) -> `sglang`.
"""

from __future__ import annotations

from collections.abc import Sequence

from sgtui.core.errors import UserError
from sgtui.core.sglang.windows import window_for

MODULE = "sglang.launch_server"


def serve_script(python: str) -> str:
    """The `sglang` console script of the environment whose interpreter is `python`."""
    folder, sep, _name = python.rpartition("/")
    return f"{folder}{sep}sglang"


def server_argv(python: str, version: str | None, args: Sequence[str]) -> list[str]:
    """The server's whole command line for `version` (None: not known, so the module form, which every
    release accepts)."""
    if version is not None and _prefers_serve(version):
        return [serve_script(python), "serve", *args]
    return [python, "-m", MODULE, *args]


def _prefers_serve(version: str) -> bool:
    try:
        return window_for(version).rules.launch_form == "serve"
    except UserError:  # not a version string: the form every release accepts
        return False
