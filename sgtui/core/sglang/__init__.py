"""What SGLang is, per release: version numbers, flag tables and the release windows of its rules.

The flag names (`parse_argv`, `FLAGS`, `LaunchSpec`, ...) are importable from here; they load on first
use, so importing `sgtui.core.sglang.versions` alone does not read the flag tables.
"""

from __future__ import annotations

from typing import Any

_FLAG_NAMES = frozenset(
    {
        "FLAGS",
        "GROUPS",
        "JSON_TEXT_FLAGS",
        "RELEASES",
        "RENAMES",
        "Flag",
        "FlagDef",
        "FlagError",
        "FlagTable",
        "LaunchSpec",
        "ParsedFlags",
        "Rename",
        "canonical_name",
        "coerce_value",
        "flag_for",
        "from_config_mapping",
        "parse_argv",
        "resolve",
        "resolve_config_key",
        "spec_from_values",
        "speculative_base",
        "spelling",
        "table_for",
        "table_from_rows",
        "to_argv",
        "to_config_mapping",
        "unknown_flag_error",
    }
)


def __getattr__(name: str) -> Any:
    if name in _FLAG_NAMES:
        from sgtui.core.sglang import flags

        return getattr(flags, name)
    raise AttributeError(f"module 'sgtui.core.sglang' has no attribute {name!r}")
