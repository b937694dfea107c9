"""Shared pieces of the "argv arrives exactly" property test, for both the in-process and sshd tiers."""

from __future__ import annotations

import json

from hypothesis import strategies as st

TRICKY = [
    " ",
    "'",
    '"',
    "$(touch PWNED)",
    "`touch PWNED`",
    ";",
    "\n",
    "\r\n",
    "🚀 modèle ✓",
    "$HOME",
    "*",
    "~",
    "{a,b}",
    "!!",
    "\x7f\x01",
    "''",
    "-",
    "--flag=v",
    "a\\b",
    "%s",
    "\t",
    "$((1+1))",
    "&&",
    "|",
    ">x",
]

arg = st.one_of(
    st.sampled_from(TRICKY), st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=40)
)
argvs = st.lists(arg, max_size=8)
envs = st.dictionaries(
    st.from_regex(r"SGT_[A-Z0-9_]{1,8}", fullmatch=True),
    st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=30),
    max_size=3,
)


def parse_argv_line(stdout: str) -> dict[str, object]:
    lines = [ln for ln in stdout.splitlines() if ln.startswith("ARGV ")]
    assert lines, f"launcher printed nothing recognisable: {stdout!r}"
    return json.loads(lines[-1][5:])  # type: ignore[no-any-return]
