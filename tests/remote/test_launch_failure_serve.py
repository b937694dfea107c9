"""A launch in the `sglang serve` form whose `sglang` script is missing names that script, not an
interpreter (the profile's `python:` was fine; SGLang is not installed beside it)."""

from __future__ import annotations

from sgtui.remote.run_errors import launch_failure
from sgtui.remote.targets import Target
from sgtui.remote.transport import Result


def test_a_missing_sglang_script_is_named_as_sglang_s_command() -> None:
    argv = ["/opt/venv/bin/sglang", "serve", "--model-path", "/m"]
    text = launch_failure(
        {"error": "not-executable"}, "h", Target(), "h", "/runs/r1", argv, Result("", "", 1)
    )
    assert "`sglang` command /opt/venv/bin/sglang" in text and "install SGLang" in text


def test_a_missing_interpreter_is_still_named_as_the_interpreter() -> None:
    argv = ["/opt/venv/bin/python", "-m", "sglang.launch_server"]
    text = launch_failure(
        {"error": "not-executable"}, "h", Target(), "h", "/runs/r1", argv, Result("", "", 1)
    )
    assert text.startswith("the interpreter /opt/venv/bin/python does not exist")
