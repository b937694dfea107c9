"""The UI's state, one object per thing the user watches; views render these and never own state.

- `RunSession` (run.py): one followed run or multi-node deployment: its records (one per node), one
  classifier per node, a bounded log (`LogBuffer`), GPU history per host, ages of its live values.
- `FollowedRuns` (followed.py): the sessions followed at once and the one in view.
- `FleetState` / `HostModel` (fleet.py): every configured host: connection state and age, GPUs,
  containers, runs.
- `Deployment` (deployment.py): the profile being edited and its fit.
"""

from sgtui.ui.session.ages import STALE_AFTER_S, Ages, age_text
from sgtui.ui.session.deployment import Deployment
from sgtui.ui.session.fleet import FleetState, GpuSummary, HostModel
from sgtui.ui.session.followed import FollowedRuns
from sgtui.ui.session.gpu_history import GpuHistory
from sgtui.ui.session.logbuffer import LogBuffer
from sgtui.ui.session.run import ALIVE, NodeStream, RunSession
from sgtui.ui.session.startup import StartupTracker

__all__ = [
    "ALIVE",
    "STALE_AFTER_S",
    "Ages",
    "Deployment",
    "FleetState",
    "FollowedRuns",
    "GpuHistory",
    "GpuSummary",
    "HostModel",
    "LogBuffer",
    "NodeStream",
    "RunSession",
    "StartupTracker",
    "age_text",
]
