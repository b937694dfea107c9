"""Launch profiles: YAML files naming where SGLang runs and with which flags.

`model.py` (the typed `Profile`, `Target`, `Problem`/`ProfileError`), `nodes.py` (a multi-node profile's
`Node` and the flags sgtui adds per node), `parse.py` (`parse_profile`/`load_profile`: every problem at once,
each with its line), `checker.py` (YAML nodes with their lines), `checks.py` (the single fields and the
`sglang:` flags), `node_checks.py` (`nodes:`, `dist_init_addr`, the split over the nodes), `files.py`
(`dump_profile`, the atomic `save_profile`, `list_profiles`).
"""

from __future__ import annotations

from sgtui.core.profiles.files import dump_profile, list_profiles, save_profile
from sgtui.core.profiles.model import Problem, Profile, ProfileEntry, ProfileError, Target
from sgtui.core.profiles.nodes import Node
from sgtui.core.profiles.parse import load_profile, parse_profile

__all__ = [
    "Node",
    "Problem",
    "Profile",
    "ProfileEntry",
    "ProfileError",
    "Target",
    "dump_profile",
    "list_profiles",
    "load_profile",
    "parse_profile",
    "save_profile",
]
