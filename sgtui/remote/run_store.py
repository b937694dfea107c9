"""sgtui's own copy, on the jump box, of every run record it launched: what still identifies a run after
its run dir on the target was removed (a cleaned ~/.local/state or /tmp while the server runs).

One small JSON file per run (per node of a multi-node run) in `paths.state_dir()/runs`: the directory
0700, each file 0600, written to a temp file, fsynced and renamed into place. `RunManager.launch` (the
one place every launch path creates a record: CLI, multi-node, TUI) calls `remember`. Env values are
never kept here (they may be secrets): their names only, as `RunRecord.to_json` has them; a stop needs
pid, pgid, process start time, boot id, run dir and argv, and the target checks all of them again before
it signals anything.

Bounded: a record is marked ended once a listing or a stop saw its run end (`mark_ended`); ended records
older than `ENDED_KEEP_S` go, and past `MAX_RECORDS` the oldest go (ended ones first). A file that cannot
be read back is never deleted: reading it for a run raises `RunStoreError` (one line naming the file and
what to do), and pruning leaves it alone.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sgtui.core import runscripts
from sgtui.core.atomic import write_atomic
from sgtui.core.bounded import BoundedInputError, load_json
from sgtui.core.errors import UserError
from sgtui.core.shell import ShellError
from sgtui.remote.run_records import RunRecord
from sgtui.remote.targets import Target

FORMAT = 1  # the "sgtui_run_record" value this code writes and reads
MAX_RECORDS = 500  # records kept at most; past it the oldest go, ended ones first
ENDED_KEEP_S = 7 * 86400  # an ended run's record is kept this long after it was seen ended
MAX_FILE_BYTES = 2 * runscripts.RECORD_MAX_BYTES  # argv is bounded by the launch's own record limit
_TMP_PREFIX = ".tmp-"
_log = logging.getLogger(__name__)


class RunStoreError(UserError):
    """A local record that cannot be read back; the message names the file and what to do."""


@dataclass(frozen=True)
class Kept:
    """One record as the store holds it: the record, its file, when it was saved and seen ended."""

    record: RunRecord
    path: Path
    saved_at: float
    ended_at: float | None = None


def place_digest(host: str, target: Target) -> str:
    """The host + target a record belongs to, as a short name part (host names may hold any character)."""
    text = f"{host}\0{target.kind}\0{target.id or ''}"
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


class RunStore:
    """The local records in `root` (default: `paths.state_dir()/runs`)."""

    def __init__(self, root: Path | None = None) -> None:
        if root is None:
            from sgtui.core import paths

            root = paths.state_dir() / "runs"
        self.root = root

    def path_for(self, record: RunRecord) -> Path:
        return self.root / f"{record.key}~{place_digest(record.host, record.target)}.json"

    def remember(self, record: RunRecord) -> Path:
        """Save `record` (replacing an older copy of the same run), then prune. Raises OSError."""
        path = self.path_for(record)
        self._write(
            path,
            {
                "sgtui_run_record": FORMAT,
                "saved_at": time.time(),
                "ended_at": None,
                "record": record.to_json(),
            },
        )
        self.prune()
        return path

    def find(self, run_id: str, host: str, target: Target) -> list[Kept]:
        """The records of run `run_id` on `host`/`target` (one per node of it there), by node rank. A file of
        that run that cannot be read raises RunStoreError naming it; it is left in place."""
        runscripts.check_run_id(run_id)
        digest = place_digest(host, target)
        names = [f"{run_id}~{digest}.json"]
        if self.root.is_dir():
            names += sorted(p.name for p in self.root.glob(f"{run_id}.node*~{digest}.json"))
        found = [self._read(self.root / name) for name in names if (self.root / name).exists()]
        matching = [
            k for k in found if k.record.id == run_id and k.record.host == host and k.record.target == target
        ]
        return sorted(matching, key=lambda k: k.record.node_rank or 0)

    def live_at(self, host: str, target: Target, skip: Iterable[str] = ()) -> tuple[list[Kept], list[str]]:
        """The records of `host`/`target` not yet seen ended, but those whose `RunRecord.key` is in `skip`
        (the target listed them): what `sgtui runs` checks for runs whose run dir is gone. Also the one-line
        problem of each file there that cannot be read (left in place)."""
        if not self.root.is_dir():
            return [], []
        skipped = set(skip)
        kept: list[Kept] = []
        problems: list[str] = []
        for path in sorted(self.root.glob(f"*~{place_digest(host, target)}.json")):
            if path.name.split("~", 1)[0] in skipped:
                continue
            try:
                found = self._read(path)
            except (OSError, RunStoreError) as exc:
                problems.append(str(exc))
                continue
            if found.ended_at is None and found.record.host == host and found.record.target == target:
                kept.append(found)
        return kept, problems

    def mark_ended(self, records: Iterable[RunRecord], now: float | None = None) -> None:
        """Note that these runs were seen ended (their records then age out after ENDED_KEEP_S). Records
        this store does not hold, or cannot read, are left as they are; a write failure is logged."""
        for record in records:
            self._mark(self.path_for(record), now)

    def mark_pruned(self, host: str, target: Target, keys: Iterable[str], now: float | None = None) -> None:
        """Runs a prune removed from their target (`RunRecord.key`s; they had ended): mark them ended."""
        digest = place_digest(host, target)
        for key in keys:
            self._mark(self.root / f"{key}~{digest}.json", now)

    def _mark(self, path: Path, now: float | None) -> None:
        if not path.exists():
            return
        try:
            data = self._load(path)
            if data.get("ended_at") is None:
                data["ended_at"] = time.time() if now is None else now
                self._write(path, data)
        except (OSError, RunStoreError) as exc:
            _log.warning("sgtui: could not mark the run in %s ended: %s", path, exc)

    def prune(self, now: float | None = None) -> list[Path]:
        """Remove ended records older than ENDED_KEEP_S, then the oldest past MAX_RECORDS (ended first);
        files that cannot be read, and other people's files, are never touched. Returns what went."""
        now = time.time() if now is None else now
        if not self.root.is_dir():
            return []
        kept: list[tuple[bool, float, Path]] = []  # (still live, saved_at, path): sorts ended, then oldest
        gone: list[Path] = []
        for path in self.root.iterdir():
            if path.name.startswith(_TMP_PREFIX):
                self._drop_stale_temp(path, now)
                continue
            if not path.name.endswith(".json"):
                continue
            try:
                data = self._load(path)
            except (OSError, RunStoreError):
                continue  # reported when that run is asked for; never deleted here
            ended = data.get("ended_at")
            saved = data.get("saved_at")
            saved_at = float(saved) if isinstance(saved, (int, float)) else 0.0
            if isinstance(ended, (int, float)) and now - ended > ENDED_KEEP_S:
                gone.append(path)
            else:
                kept.append((ended is None, saved_at, path))
        kept.sort()
        gone += [p for _, _, p in kept[: max(0, len(kept) - MAX_RECORDS)]]
        for path in gone:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        return gone

    def _drop_stale_temp(self, path: Path, now: float) -> None:
        """A temp file of a write that died more than an hour ago."""
        with contextlib.suppress(OSError):
            if now - path.lstat().st_mtime > 3600:
                path.unlink()

    def _ensure_root(self) -> None:
        self.root.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.root.mkdir(mode=0o700, exist_ok=True)
        if self.root.stat().st_mode & 0o777 != 0o700:
            os.chmod(self.root, 0o700)

    def _write(self, path: Path, data: dict[str, Any]) -> None:
        self._ensure_root()
        text = json.dumps(data, ensure_ascii=False, sort_keys=True) + "\n"
        write_atomic(path, text, mode=0o600, prefix=_TMP_PREFIX)

    def _load(self, path: Path) -> dict[str, Any]:
        try:
            size = path.stat().st_size
            if size > MAX_FILE_BYTES:  # a huge file is never read whole
                raise BoundedInputError(f"{size:,} bytes, past the {MAX_FILE_BYTES:,}-byte limit of a record")
            data = load_json(path.read_bytes(), str(path), max_bytes=MAX_FILE_BYTES)
        except (BoundedInputError, ValueError) as exc:  # JSONDecodeError and bad UTF-8 are ValueErrors
            raise self._damaged(path, str(exc).removeprefix(f"{path}: ")) from None
        except OSError as exc:  # unreadable: permissions, a directory in its place
            raise self._damaged(path, exc.strerror or type(exc).__name__) from None
        if not isinstance(data, dict) or data.get("sgtui_run_record") != FORMAT:
            raise self._damaged(path, "it is not a run record this sgtui writes")
        return data

    def _read(self, path: Path) -> Kept:
        data = self._load(path)
        try:
            record = _record_from_json(data["record"])
            saved = data["saved_at"]
            ended = data.get("ended_at")
            if isinstance(saved, bool) or not isinstance(saved, (int, float)):
                raise ValueError("saved_at")
            if ended is not None and (isinstance(ended, bool) or not isinstance(ended, (int, float))):
                raise ValueError("ended_at")
        except (KeyError, TypeError, ValueError, AttributeError, ShellError) as exc:
            raise self._damaged(path, f"a field is missing or wrong: {exc}") from None
        return Kept(record, path, float(saved), None if ended is None else float(ended))

    @staticmethod
    def _damaged(path: Path, why: str) -> RunStoreError:
        return RunStoreError(
            f"{path}: sgtui's local record of a run cannot be read ({why}); it was left as it is: move it "
            "aside or delete it, then run the command again (`sgtui runs` lists what the target has)"
        )


def _record_from_json(data: dict[str, Any]) -> RunRecord:
    """`RunRecord.to_json()` read back, every value checked as a listing checks it (env: names only)."""
    pid, pgid = data["pid"], data["pgid"]
    runscripts.check_pgid(pgid)
    if pid != pgid:
        raise ValueError(f"pid {pid!r} differs from pgid {pgid!r}")
    run_dir = data["run_dir"]
    if not isinstance(run_dir, str) or not run_dir.startswith("/"):
        raise ValueError(f"run_dir {run_dir!r}")
    runscripts.check_run_id(run_dir.rsplit("/", 1)[-1])
    node_rank = data.get("node_rank")
    if node_rank is not None and (isinstance(node_rank, bool) or not isinstance(node_rank, int)):
        raise ValueError(f"node_rank {node_rank!r}")
    argv = data["argv"]
    gpus = data.get("gpus", [])
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise ValueError("argv")
    if not isinstance(gpus, list) or not all(isinstance(g, int) and not isinstance(g, bool) for g in gpus):
        raise ValueError("gpus")
    user, profile, started = data.get("user"), data.get("profile"), data.get("started_at", 0.0)
    if isinstance(started, bool) or not isinstance(started, (int, float)):
        raise ValueError("started_at")
    return RunRecord(
        id=runscripts.check_run_id(data["id"]),
        host=_text(data["host"], "host"),
        target=Target.from_mapping(data["target"]),
        run_dir=run_dir,
        argv=argv,
        env={},
        gpus=gpus,
        pid=pid,
        pgid=pgid,
        start=runscripts.check_start(data["start"]),
        boot=runscripts.check_boot(data["boot"]),
        started_at=float(started),
        user=None if user is None else _text(user, "user"),
        node_rank=node_rank,
        profile=None if profile is None else _text(profile, "profile"),
    )


def _text(value: object, name: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} {value!r}")
    return value


def keep_locally(record: RunRecord) -> None:
    """`RunStore().remember(record)` for a launch: a jump box that cannot write its copy (a full disk, a
    read-only home) logs why and never fails the launch: the target keeps the run's own record."""
    try:
        RunStore().remember(record)
    except Exception as exc:  # the server already runs: nothing here may fail its launch
        _log.warning("sgtui: run %s launched, but its local record could not be saved: %s", record.id, exc)
