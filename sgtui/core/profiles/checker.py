"""Reading a profile's YAML as nodes, so each problem carries the line of the node it is about."""

from __future__ import annotations

from typing import Any

import yaml

from sgtui.core.bounded import BoundedInputError
from sgtui.core.profiles.model import Problem
from sgtui.core.yamlsafe import yaml_loader, yaml_problem


class Checker:
    """Walks the composed YAML so each problem can carry the line of the node it is about."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.problems: list[Problem] = []

    def add(self, node: yaml.Node | None, flag: str | None, message: str) -> None:
        line = node.start_mark.line + 1 if node is not None else None
        self.problems.append(Problem(self.file, line, flag, message))


def compose(text: str, checker: Checker) -> tuple[yaml.SafeLoader, yaml.Node | None]:
    try:
        loader = yaml_loader(text, checker.file)
    except BoundedInputError as err:
        checker.problems.append(Problem(checker.file, None, None, str(err).removeprefix(f"{checker.file}: ")))
        return yaml.SafeLoader(""), None
    try:
        node = loader.get_single_node()
    except yaml.YAMLError as err:
        line, what = yaml_problem(err)
        checker.problems.append(Problem(checker.file, line, None, what))
        return loader, None
    return loader, node


def construct(loader: yaml.SafeLoader, node: yaml.Node, checker: Checker, where: str) -> tuple[bool, Any]:
    try:
        return True, loader.construct_object(node, deep=True)
    except yaml.YAMLError as err:
        line, what = yaml_problem(err)
        checker.problems.append(Problem(checker.file, line, where, f"cannot read this value: {what}"))
        return False, None


def pairs(node: yaml.MappingNode, checker: Checker, section: str | None) -> list[tuple[yaml.Node, yaml.Node]]:
    """Key/value node pairs; duplicate keys are problems (YAML would silently keep the last)."""
    seen: dict[str, int] = {}
    pairs: list[tuple[yaml.Node, yaml.Node]] = []
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            checker.add(key_node, section, "keys must be plain names")
            continue
        key = key_node.value
        if key in seen:
            where = f"{section}.{key}" if section else key
            checker.add(key_node, where, f"given twice (first on line {seen[key]}); keep one")
            continue
        seen[key] = key_node.start_mark.line + 1
        pairs.append((key_node, value_node))
    return pairs
