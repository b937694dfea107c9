"""What `sgtui status` and `sgtui bench` share: the run (by id, at a place), its connection, where its
server listens as seen from its host, and its SGLang release (for the endpoint names)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sgtui.remote.connection import Transport
    from sgtui.remote.runs import RunManager, RunRecord


@dataclass
class ServedRun:
    conn: Transport
    manager: RunManager
    record: RunRecord
    address: str
    version: str | None

    @property
    def python(self) -> str:
        from sgtui.remote.serving import python_of

        return python_of(self.record.argv)


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    from sgtui.commands.runs import add_place_arguments

    parser.add_argument("run_id", metavar="RUN_ID", help="the run, as `sgtui runs` lists it")
    add_place_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def check_args(args: argparse.Namespace) -> None:
    from sgtui.core.errors import UserError
    from sgtui.core.runscripts import check_run_id

    try:
        check_run_id(args.run_id)
    except UserError as exc:
        raise UserError(f"{exc}; `sgtui runs` lists the ids") from None


async def open_run(args: argparse.Namespace, command: str) -> ServedRun | int:
    """The run named on the command line, connected; an exit code (printed why) when there is none."""
    from sgtui.commands.runs import open_manager, resolve_place
    from sgtui.core.errors import UserError
    from sgtui.remote.connection import RemoteError
    from sgtui.remote.health import service_address
    from sgtui.remote.runs import ForeignRunError
    from sgtui.remote.serving import python_of
    from sgtui.remote.targets import sglang_version

    place = resolve_place(args)
    conn, manager = open_manager(place)
    try:
        records = [r for r in await manager.list_runs() if r.id == args.run_id and r.node_rank in (None, 0)]
        if not records:
            print(
                f"sgtui {command}: no run {args.run_id} on {place.host} ({place.target.label}) in "
                f"{manager.runs_dir}; `sgtui runs` lists the runs there",
                file=sys.stderr,
            )
            await conn.close()
            return 2
        record = records[0]
        manager.refuse(record, command)
        address = await service_address(conn, manager.target)
        try:
            version = await sglang_version(conn, manager.target, python_of(record.argv))
        except (RemoteError, UserError):
            version = None  # the release's endpoint names are then tried newest first
    except ForeignRunError as exc:  # a record this user may not act on: refused, as `sgtui stop` does
        await conn.close()
        print(f"sgtui {command}: {exc}", file=sys.stderr)
        return 2
    except RemoteError as exc:  # the host unreachable, a refused key, a runs dir that is not ours
        await conn.close()
        print(f"sgtui {command}: {exc}", file=sys.stderr)
        return 1
    except BaseException:
        await conn.close()
        raise
    return ServedRun(conn, manager, record, address, version)
