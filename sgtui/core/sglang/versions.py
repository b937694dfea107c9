"""SGLang version strings as releases: parse, order, and say what kind of build a string names.

Every per-release decision in sgtui starts from `parse_version`; nothing else parses version strings.
The forms seen in the wild: PyPI releases ("0.5.10", "0.4.3.post2", "0.5.11rc2"), a leading "v" from a git
tag, dev and local builds ("0.5.24.dev3+gabc123", what `pip show sglang` reports for a source checkout) and
the untagged "0.0.0.dev0" of an editable install without tags.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import total_ordering

from sgtui.core.errors import UserError

_VERSION = re.compile(
    r"""^\s*v?
    (?P<release>\d+(?:\.\d+){0,3})
    (?:[._-]?(?P<pre>a|b|rc)(?P<pre_n>\d*))?
    (?:[._-]?post(?P<post>\d*))?
    (?:[._-]?dev(?P<dev>\d*))?
    (?:\+(?P<local>[A-Za-z0-9.]+))?
    \s*$""",
    re.VERBOSE | re.IGNORECASE,
)
_PRE_ORDER = {"a": 0, "b": 1, "rc": 2}


@total_ordering
@dataclass(frozen=True, eq=False)
class ReleaseVersion:
    """An orderable SGLang version. `release` is (major, minor, patch); a fourth number, as in
    "0.4.3.4", is kept in `extra`. Ordering follows PEP 440: dev < pre-release < release < post;
    a local part ("+gabc") does not change the order."""

    release: tuple[int, int, int]
    extra: int = 0
    stage: tuple[int, int] = (3, 0)  # (0 a | 1 b | 2 rc, n) for a pre-release, (3, 0) for a final one
    post: int | None = None
    dev: int | None = None
    text: str = field(default="")

    @property
    def key(self) -> tuple[object, ...]:
        """The sort key: release, then pre-release stage, then post, with dev builds first."""
        plain_dev = self.dev is not None and self.stage == (3, 0) and self.post is None
        stage = (-1, 0) if plain_dev else self.stage  # "0.5.24.dev3" comes before "0.5.24rc0"
        return (
            self.release,
            self.extra,
            stage,
            -1 if self.post is None else self.post,
            self.dev is None,
            self.dev or 0,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ReleaseVersion) and self.key == other.key

    def __lt__(self, other: ReleaseVersion) -> bool:
        return self.key < other.key

    def __hash__(self) -> int:
        return hash(self.key)

    @property
    def is_dev(self) -> bool:
        """A dev or untagged source build: not a release on the package index."""
        return self.dev is not None or self.release == (0, 0, 0) or "+" in self.text

    @property
    def is_untagged(self) -> bool:
        """ "0.0.0.dev0": an editable install of a checkout without tags; says nothing of its rules."""
        return self.release[:2] == (0, 0)

    @property
    def is_prerelease(self) -> bool:
        return self.stage[0] < 3

    @property
    def base(self) -> str:
        """The release it belongs to, as "0.5.10" (no post/rc/dev parts)."""
        parts = (*self.release, self.extra) if self.extra else self.release
        return ".".join(str(part) for part in parts)

    def __str__(self) -> str:
        return self.text or self.base


def parse_version(text: str) -> ReleaseVersion:
    """Parse an SGLang version string; `UserError` naming the string when it is not one."""
    match = _VERSION.match(str(text))
    if not match:
        raise UserError(
            f"SGLang version {str(text)[:60]!r} is not a version number; use one like 0.5.11 or 0.4.3.post2"
        )
    numbers = [int(part) for part in match.group("release").split(".")]
    while len(numbers) < 3:
        numbers.append(0)
    stage = (3, 0)
    if match.group("pre"):
        stage = (_PRE_ORDER[match.group("pre").lower()], int(match.group("pre_n") or 0))
    post = match.group("post")
    dev = match.group("dev")
    return ReleaseVersion(
        release=(numbers[0], numbers[1], numbers[2]),
        extra=numbers[3] if len(numbers) > 3 else 0,
        stage=stage,
        post=int(post or 0) if post is not None else None,
        dev=int(dev or 0) if dev is not None else None,
        text=str(text).strip().lstrip("vV"),
    )
