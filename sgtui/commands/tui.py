"""`sgtui` / `sgtui tui`: the app on your real hosts (~/.ssh/config and sgtui's hosts.yaml)."""

from __future__ import annotations

import argparse

HELP = "open the app on your hosts (the default when no command is given)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "profile",
        nargs="?",
        help="a profile YAML to open (default: the first one in sgtui's profiles folder)",
    )
    parser.add_argument(
        "--host", help="use this host instead of the profile's (an ssh alias or hosts.yaml name)"
    )
    parser.add_argument(
        "--readonly",
        action="store_true",
        help="watch only: no launch, stop, restart or applied fix (for someone else's run)",
    )


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from sgtui.ui.launcher import open_profile, run_app
    from sgtui.ui.remote_backend import RemoteBackend

    profile, path = open_profile(Path(args.profile) if args.profile else None, host=args.host)
    return run_app(RemoteBackend(), profile, path, readonly=args.readonly)
