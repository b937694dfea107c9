"""Write screenshots/*.svg from the real app driven through the demo story on the simulated host.

    .venv/bin/python scripts/screenshots.py [--out screenshots] [--size 120x40]

Everything is real (SSH to the in-process sim, the sim's SGLang stand-in, the fit engine, the classifier),
except one thing: the sim's containers do not hold the model folder, so the model's config.json is read
from sgtui/sim/models when the target cannot provide it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sgtui.core.profiles import load_profile  # noqa: E402
from sgtui.remote.hosts import load_hosts  # noqa: E402
from sgtui.sim.host import SimHost  # noqa: E402
from sgtui.ui.app import SgtuiApp  # noqa: E402
from sgtui.ui.remote_backend import RemoteBackend  # noqa: E402
from sgtui.ui.screens.confirm import ConfirmScreen  # noqa: E402
from sgtui.ui.screens.fit_confirm import FitConfirmScreen  # noqa: E402
from sgtui.ui.views import ContainerView  # noqa: E402

SIM_MODELS = REPO / "sgtui" / "sim" / "models"


class ShotBackend(RemoteBackend):
    async def model_config(
        self, host: str, target: ContainerView | None, model_path: str
    ) -> dict[str, Any] | None:
        try:
            return await super().model_config(host, target, model_path)
        except Exception:
            folder = SIM_MODELS / Path(model_path).name
            index = json.loads((folder / "model.safetensors.index.json").read_text())
            return {
                "config": json.loads((folder / "config.json").read_text()),
                "weight_bytes": index["metadata"]["total_size"],
            }


async def until(pilot: Any, condition: Callable[[], Any], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"screenshots: timed out waiting for {what}")
        await pilot.pause(0.05)


async def shoot(out: Path, size: tuple[int, int]) -> list[Path]:
    config = Path(tempfile.mkdtemp(prefix="sgtui-shots-"))
    os.environ["SGTUI_CONFIG_DIR"] = str(config)
    written: list[Path] = []
    async with SimHost(speed=4.0) as host:
        files = host.write_config(config)
        path = next(p for p in files.profiles if "a6000" in p.stem)
        backend = ShotBackend(
            load_hosts(ssh_config=False), runs_dir=str(host.state_dir / "runs"), user_known_hosts=None
        )
        app = SgtuiApp(backend, load_profile(path), path, theme="textual-dark")
        async with app.run_test(size=size) as pilot:

            async def save(name: str) -> None:
                app.clear_notifications()
                await pilot.pause(0.2)
                await pilot.wait_for_scheduled_animations()
                target = out / f"{name}.svg"
                target.write_text(app.export_screenshot(title=f"sgtui demo: {name}"), encoding="utf-8")
                written.append(target)

            await until(pilot, lambda: app.fit_report is not None and app.version, 30, "the fit")
            await until(pilot, lambda: app.fleet.host("sim").containers, 30, "containers")
            await pilot.press("1")
            await save("hosts")
            await pilot.press("2")
            await save("launch-form")
            await pilot.press("escape", "3", "l")
            # the fit says FAILS, so l asks first (README): launch anyway, to show the failure it predicted
            await until(pilot, lambda: isinstance(app.screen, FitConfirmScreen), 10, "the fit question")
            await pilot.press("y")
            await until(pilot, lambda: app.run_state == "failed", 60, "the failure")
            await save("failure-diagnosis")
            before = dict(app.form.values())
            await pilot.press("a")  # the diagnosis's first fix, the one the fit ranks first
            await until(pilot, lambda: dict(app.form.values()) != before, 10, "the fix")
            await pilot.press("r")
            await pilot.pause(0.5)
            if isinstance(app.screen, (FitConfirmScreen, ConfirmScreen)):  # a tight or unknown fit asks
                await pilot.press("y")
            await until(pilot, lambda: app.run_state == "ready", 90, "ready")
            await pilot.pause(2.0)
            await save("ready")
            await pilot.press("4")
            await save("runs")
            await pilot.press("3", "g")
            await pilot.pause(0.5)
            await save("gpu-detail")
            await pilot.press("escape")
    return written


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=REPO / "screenshots")
    parser.add_argument("--size", default="120x40", help="terminal size, COLSxROWS")
    ns = parser.parse_args()
    cols, rows = (int(x) for x in ns.size.lower().split("x"))
    ns.out.mkdir(parents=True, exist_ok=True)
    for path in asyncio.run(shoot(ns.out, (cols, rows))):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
