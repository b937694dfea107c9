"""YAML from outside without aliases or unbounded size: profiles, hosts.yaml and keys.yaml.

A billion-laughs alias chain is the one way a small YAML text expands into gigabytes; sgtui's files never
need aliases, so they are refused with the line they are on. Kept apart from `core/bounded.py` so that
`sgtui fit`, which reads only JSON, never imports yaml.
"""

from __future__ import annotations

import yaml

from sgtui.core.bounded import BoundedInputError

YAML_MAX_BYTES = 1 * 2**20  # a profile or hosts file is a few kB; 1 MiB is far past any real one


class NoAliasLoader(yaml.SafeLoader):
    """SafeLoader that refuses aliases (`*name`): sgtui's files never need them, and an alias chain
    is the one way a small YAML text can expand into an unbounded value."""

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node | None:  # type: ignore[override]
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.MarkedYAMLError(
                None,
                None,
                f"YAML aliases (*{event.anchor}) are not allowed in sgtui's files; write the value out",
                event.start_mark,
            )
        return super().compose_node(parent, index)  # type: ignore[no-untyped-call]


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
