"""One module per `sgtui` subcommand.

Each module exposes `NAME`, `HELP`, `add_arguments(parser)` and `run(args) -> int`, and imports nothing heavy
at module level: `sgtui fit` and `sgtui explain` must start fast, so Textual and asyncssh are imported
inside `run` only where a command needs them.
"""

COMMANDS = (
    "tui",
    "demo",
    "fit",
    "explain",
    "launch",
    "runs",
    "stop",
    "sim-host",
    "flags",
    "status",
    "bench",
    "fleet",
)
