"""The `sgtui` entry point: a thin argparse dispatcher over sgtui.commands.*."""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import sys
from types import ModuleType

from sgtui import __version__
from sgtui.commands import COMMANDS
from sgtui.core.errors import UserError


def _module(name: str) -> ModuleType:
    return importlib.import_module("sgtui.commands." + name.replace("-", "_"))


def build_parser(selected: str | None = None) -> argparse.ArgumentParser:
    """Build the parser; only the selected subcommand's module is imported (keeps `sgtui fit` fast)."""
    parser = argparse.ArgumentParser(
        prog="sgtui",
        description="Launch, watch and fix SGLang servers on your own GPU hosts over SSH.",
    )
    parser.add_argument("--version", action="version", version=f"sgtui {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        if name == selected:
            mod = _module(name)
            p = sub.add_parser(name, help=mod.HELP, description=mod.HELP)
            mod.add_arguments(p)
            p.set_defaults(_run=mod.run)
        else:
            sub.add_parser(name, help=_SHORT_HELP.get(name, ""), add_help=False)
    return parser


_SHORT_HELP = {
    "tui": "open the app (the default when no command is given)",
    "demo": "open the app against a built-in simulated GPU host",
    "fit": "predict whether an SGLang launch fits in GPU memory, and why not",
    "explain": "read an SGLang log: startup timeline, the error and its root cause",
    "launch": "launch a profile headless; --watch follows it to ready or failure",
    "runs": "list the runs sgtui launched on a target, newest first",
    "stop": "stop one run: TERM its process group, then KILL; says what is left",
    "sim-host": "run the simulated GPU host as a standalone SSH server on 127.0.0.1",
    "flags": "list an SGLang release's launch flags, or what changed between two (--diff A B)",
    "fleet": "every host's GPUs and runs at once; --json for scripts, --once for one sample",
    "status": "is a run's server answering and generating: health, smoke request, tokens/s, queue, KV",
    "bench": "a bounded load test of a run's server: throughput, TTFT and ITL percentiles",
}


def _did_you_mean(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


def _is_profile(arg: str) -> bool:
    """`sgtui PROFILE.yaml` opens the app on that profile, as `sgtui tui PROFILE.yaml` does."""
    return arg.endswith((".yaml", ".yml")) or os.path.isfile(arg)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    selected = next((a for a in argv if not a.startswith("-")), None)
    if selected is not None and selected not in COMMANDS and _is_profile(selected):
        argv = ["tui", *argv]
        selected = "tui"
    if selected is None and not any(a in ("-h", "--help", "--version") for a in argv):
        argv = ["tui", *argv]
        selected = "tui"
    if selected is not None and selected not in COMMANDS:
        print(
            f"sgtui: unknown command {selected!r}{_did_you_mean(selected, list(COMMANDS))} "
            f"(commands: {', '.join(COMMANDS)}; a profile file opens the app)",
            file=sys.stderr,
        )
        return 2
    parser = build_parser(selected)
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        hint = ""
        if selected == "fit":
            hint = " (SGLang's own flags go after `--`: sgtui fit --gpu A6000 -- --model-path M --tp 2)"
        sub = _subparser(parser, selected)
        if sub is not None and unknown[0].startswith("--"):
            options = [o for o in sub._option_string_actions if o.startswith("--")]
            hint = _did_you_mean(unknown[0].split("=", 1)[0], options) + hint
        print(f"sgtui: unrecognised arguments: {' '.join(unknown)}{hint}", file=sys.stderr)
        return 2
    if not hasattr(args, "_run"):
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except UserError as exc:
        print(f"sgtui {args.command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `sgtui explain log | head`: the reader left; say nothing more (and not on the closing flush).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def _subparser(parser: argparse.ArgumentParser, name: str | None) -> argparse.ArgumentParser | None:
    for action in parser._subparsers._group_actions if parser._subparsers else ():
        choices = getattr(action, "choices", None) or {}
        if name in choices:
            return choices[name]  # type: ignore[no-any-return]
    return None


if __name__ == "__main__":
    raise SystemExit(main())
