"""YAML from outside without aliases or unbounded size: profiles, hosts.yaml and keys.yaml.

A billion-laughs alias chain is the one way a small YAML text expands into gigabytes; sgtui's files never
need aliases, so they are refused with the line they are on. Nesting past `MAX_DEPTH` (PyYAML's composer
recurses: ~330 levels end in a RecursionError) and integers past `MAX_INT_DIGITS` (Python refuses to convert
over 4,300 digits, with a ValueError) are refused the same way, each with its line. `yaml_problem` words any
YAML error as one line (a tab used for indentation says so). Kept apart from `core/bounded.py` so that
`sgtui fit`, which reads only JSON, never imports yaml.
"""

from __future__ import annotations

import yaml

from sgtui.core.bounded import MAX_INT_DIGITS, BoundedInputError

YAML_MAX_BYTES = 1 * 2**20  # a profile or hosts file is a few kB; 1 MiB is far past any real one
MAX_DEPTH = 64  # sgtui's files nest 3 or 4 levels


class NoAliasLoader(yaml.SafeLoader):
    """SafeLoader that refuses aliases (`*name`): sgtui's files never need them, and an alias chain
    is the one way a small YAML text can expand into an unbounded value."""

    _depth = 0

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node | None:  # type: ignore[override]
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.MarkedYAMLError(
                None,
                None,
                f"YAML aliases (*{event.anchor}) are not allowed in sgtui's files; write the value out",
                event.start_mark,
            )
        if self._depth >= MAX_DEPTH:
            raise yaml.MarkedYAMLError(
                None,
                None,
                f"nested more than {MAX_DEPTH} levels deep; sgtui's files never nest like that, so the file "
                "looks corrupt or hostile",
                self.peek_event().start_mark,
            )
        self._depth += 1
        try:
            return super().compose_node(parent, index)  # type: ignore[no-untyped-call]
        finally:
            self._depth -= 1


def _bounded_int(loader: yaml.SafeLoader, node: yaml.Node) -> int:
    digits = sum(c.isdigit() for c in str(node.value))
    if digits > MAX_INT_DIGITS:
        raise yaml.constructor.ConstructorError(
            None,
            None,
            f"an integer of {digits:,} digits; no setting takes a number that long (at most "
            f"{MAX_INT_DIGITS} digits)",
            node.start_mark,
        )
    return int(loader.construct_yaml_int(node))  # type: ignore[arg-type]


NoAliasLoader.add_constructor("tag:yaml.org,2002:int", _bounded_int)


def yaml_problem(err: yaml.YAMLError) -> tuple[int | None, str]:
    """(line, one-line wording) of a YAML error: PyYAML's scanner text for a tab becomes what to do."""
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    line = mark.line + 1 if mark is not None else None
    problem = getattr(err, "problem", None)
    if problem and ("'\\t'" in problem or "tab character" in problem):
        return line, "tabs are not allowed for indentation in YAML; indent with spaces"
    if isinstance(err, yaml.MarkedYAMLError) and problem and not err.context:
        return line, problem  # sgtui's own refusals above: already one clear line
    if isinstance(err, yaml.MarkedYAMLError):
        what = "; ".join(x for x in (err.context, err.problem) if x)
        return line, f"YAML syntax error: {what}"
    return line, f"YAML syntax error: {' '.join(str(err).split())}"


def yaml_loader(text: str, file: str) -> NoAliasLoader:
    """A loader over `text`, refusing a text past YAML_MAX_BYTES up front."""
    if len(text) > YAML_MAX_BYTES:
        raise BoundedInputError(
            f"{file}: {len(text):,} characters is too large for a sgtui file (limit {YAML_MAX_BYTES:,});"
            " is this the right file?"
        )
    return NoAliasLoader(text)


def compose_yaml(text: str, file: str) -> yaml.Node | None:
    """The single document's node tree, aliases refused; YAML errors propagate as `yaml.YAMLError`."""
    loader = yaml_loader(text, file)
    try:
        return loader.get_single_node()
    finally:
        loader.dispose()
