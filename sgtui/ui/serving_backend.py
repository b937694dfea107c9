"""The serving half of `RemoteBackend` (mixed in): a ready run's `/metrics`, its smoke request and the
load probe, over the same SSH connection as everything else (sgtui.remote.serving / loadgen).

One `ServingReader` per run keeps the previous scrape (rates and window percentiles need two); the
server's address as seen from its host is looked up once per run. The poll tells which runs are still
read (`forget_serving`, each second): the readers of the rest are closed and dropped, so a long session
keeps readers for its ready followed runs only."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from sgtui.ui.views import RunView

if TYPE_CHECKING:
    from sgtui.core.serving.bench import BenchReport
    from sgtui.core.serving.state import ServingSnapshot, SmokeResult
    from sgtui.remote.connection import Transport
    from sgtui.remote.loadgen import Progress
    from sgtui.remote.runs import RunManager, RunRecord
    from sgtui.remote.serving import ServingReader

NO_METRICS = "no /metrics (launched without --enable-metrics): numbers from the log"
# SGLang's uvicorn logs every request: a 1 Hz poll adds a line a second to the run's log; the releases
# whose flag table has --uvicorn-access-log-exclude-prefixes can drop them
QUIET_HINT = "each poll logs a line: --uvicorn-access-log-exclude-prefixes /metrics hides them"


class ServingBackend:
    _serving_readers: dict[str, ServingReader]

    def _conn(self, host: str) -> Transport:
        raise NotImplementedError

    def _record_manager(self, run: RunView) -> tuple[RunRecord, RunManager]:
        raise NotImplementedError

    async def _reader(self, run: RunView) -> ServingReader:
        from sgtui.remote.health import service_address
        from sgtui.remote.serving import ServingReader, run_port

        readers = self.__dict__.setdefault("_serving_readers", {})
        reader = readers.get(run.run_id)
        if reader is None:
            record, manager = self._record_manager(run)
            address = await service_address(self._conn(run.host), manager.target)
            made = ServingReader(self._conn(run.host), run_port(record.argv), address)
            # the smoke and the first read ask at once: whichever looked the address up second takes the
            # reader the first made (keeping its previous scrape); its own never opened a connection
            reader = readers.setdefault(run.run_id, made)
        return reader

    def forget_serving(self, keep: Collection[str]) -> None:
        """Close and drop the reader of every run not in `keep` (the run ids still polled)."""
        readers: dict[str, ServingReader] = self.__dict__.get("_serving_readers", {})
        for run_id in [r for r in readers if r not in keep]:
            readers.pop(run_id).close()

    async def serving(self, run: RunView) -> tuple[ServingSnapshot | None, str | None]:
        """The run's numbers since the last call (None without --enable-metrics, with why)."""
        from sgtui.remote.serving import metrics_enabled

        record: Any = run.raw
        if record is None or not metrics_enabled(list(record.argv)):
            return None, NO_METRICS
        reader = await self._reader(run)
        snap = await reader.scrape()
        if snap is not None and "--uvicorn-access-log-exclude-prefixes" not in record.argv:
            return snap, QUIET_HINT
        return snap, reader.last_error

    async def smoke(self, run: RunView) -> SmokeResult:
        return await (await self._reader(run)).smoke()

    async def bench(
        self, run: RunView, *, requests: int, concurrency: int, input_len: int, output_len: int,
        on_progress: Progress | None = None,
    ) -> BenchReport:  # fmt: skip
        """The load probe (sglang.bench_serving on the target where it runs, else the built-in client),
        its report saved beside the run."""
        from sgtui.remote.loadgen import load_probe
        from sgtui.remote.serving import python_of

        reader = await self._reader(run)
        record, manager = self._record_manager(run)
        return await load_probe(
            self._conn(run.host), manager.target, record.run_dir, python_of(record.argv), reader.port,
            reader.host,
            requests=requests, concurrency=concurrency, input_len=input_len, output_len=output_len,
            env=dict(record.env), on_progress=on_progress,
        )  # fmt: skip

    async def bench_reports(self, run: RunView) -> list[BenchReport]:
        from sgtui.remote.loadgen import list_reports

        record, manager = self._record_manager(run)
        return await list_reports(self._conn(run.host), manager.target, record.run_dir)
