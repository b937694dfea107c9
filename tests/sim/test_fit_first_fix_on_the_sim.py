"""The failing Qwen3.6-27B 0.5.9 launch on the simulated host: the diagnosis of the log the simulator's
SGLang stand-in writes leads with the fix the TUI's question and `sgtui fit` offer first."""

from __future__ import annotations

import re

from sgtui.core.profiles.parse import load_profile
from tests.cases import QWEN_ARGS
from tests.core.test_fit_fixes import ROOT, SIM_QWEN, _three_first_fixes
from tests.sim.conftest import Sim, free_port, wait_for

SIGQUIT = "Received sigquit from a child process. It usually means the child failed."


async def test_the_sims_failing_0_5_9_launch_gets_the_same_first_fix_everywhere(sim: Sim) -> None:
    server = await sim.launch([*QWEN_ARGS, "--port", str(free_port())])
    await wait_for(lambda: SIGQUIT in server.text(), what="the sigquit line", detail=server.text)
    text = server.text()
    free = float(re.search(r"Load weight begin\. avail mem=([\d.]+) GB", text).group(1))  # type: ignore[union-attr]
    profile = load_profile(ROOT / "profiles" / "qwen36-27b-2xa6000.yaml")
    launch = {
        k: v for k, v in profile.sglang.items() if k not in ("--reasoning-parser", "--tool-call-parser")
    }
    tui, cli, diag = _three_first_fixes(launch, SIM_QWEN, "A6000", "0.5.9", free, text)
    assert tui == cli == diag
    assert tui[0] == "--max-running-requests"
