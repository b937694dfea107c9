"""keys.yaml in the config dir: remap any key by its binding id, e.g. `launch: L` or `quit: ctrl+q`."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import yaml

from sgtui.core.bounded import short_repr
from sgtui.core.errors import UserError
from sgtui.core.yamlsafe import compose_yaml, yaml_problem

KEYS_FILE = "keys.yaml"


def load_keymap(path: Path, binding_ids: Iterable[str]) -> dict[str, str]:
    """binding id -> key(s); every problem in the file is reported at once, with its line."""
    known = sorted(set(binding_ids))
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"{path}: cannot read it ({exc.strerror})") from None
    try:
        node = compose_yaml(text, str(path))
    except yaml.YAMLError as exc:
        line, problem = yaml_problem(exc)
        where = f":{line}" if line is not None else ""
        raise UserError(f"{path}{where}: {problem}; write one `binding-id: key` per line") from None
    if node is None:
        return {}
    if not isinstance(node, yaml.MappingNode):
        raise UserError(f"{path}:{node.start_mark.line + 1}: expected `binding-id: key` lines")
    keymap: dict[str, str] = {}
    problems: list[str] = []
    for key_node, value_node in node.value:
        line = key_node.start_mark.line + 1
        ident, keys = key_node.value, value_node.value
        if ident not in known:
            problems.append(
                f"{path}:{line}: {short_repr(ident)} is not a binding id (known: {', '.join(known)})"
            )
        elif not isinstance(value_node, yaml.ScalarNode) or not str(keys).strip():
            problems.append(f"{path}:{line}: {ident}: give a key such as `L` or `ctrl+l` (several: `L,f5`)")
        else:
            keymap[ident] = str(keys).strip()
    if problems:
        raise UserError("\n".join(problems))
    return keymap
