"""The fit arithmetic: what SGLang's startup memory does on a given GPU, per release window.

`fit(spec, model, gpu, version=...) -> FitReport`; see engine.py for the pipeline and
`sgtui.core.sglang.windows` for the per-release rules it asks for.
"""

from sgtui.core.fit.engine import TIGHT_SHARE, fit
from sgtui.core.fit.report import BudgetLine, FitReport, FitWarning, Fix, MambaPool, Warning

__all__ = ["TIGHT_SHARE", "BudgetLine", "FitReport", "FitWarning", "Fix", "MambaPool", "Warning", "fit"]
