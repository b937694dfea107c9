"""Build the fit panel's report from the form: form values + model config + GPU size -> FitReport dict."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sgtui.core.errors import UserError


@dataclass(frozen=True)
class FitInputs:
    """Everything the fit needs besides the flags; gathered from the host as it becomes known."""

    model_config: dict[str, Any] | None = None
    weight_bytes: int | None = None
    gpu_name: str = ""
    gpu_mib: int | None = None
    n_gpus: int | None = None
    version: str | None = None
    free_gib: float | None = None
    model_error: str = ""  # why the model's config.json could not be read on the target
    flags: Any = None  # the target's own FlagTable once read (types the values); None: the shipped one
    gpu_error: str = ""  # why the host cannot say what its GPUs are (no nvidia-smi, no driver)
    # the GPUs the launch asks for as nvidia-smi read them, with the memory in use on them: the fit is then
    # `core.preflight.fit_on_target`'s, the one headless `sgtui launch` makes (live free memory)
    live: tuple[Any, ...] = ()


def compute_fit(values: dict[str, Any], inputs: FitInputs) -> dict[str, Any]:
    """Returns the `sgtui fit --json` dict, with each warning's flag and suggested value."""
    from sgtui.core.fit import fit
    from sgtui.core.gpus import GpuSpec
    from sgtui.core.model import model_facts_from_config
    from sgtui.core.sglang.flags import spec_from_values

    if inputs.model_config is None:
        raise UserError(
            inputs.model_error
            or "waiting for the model's config.json from the target (--model-path's folder)"
        )
    if inputs.gpu_mib is None:
        if inputs.gpu_error:
            raise UserError(
                f"cannot size the GPU: {inputs.gpu_error}. Type the GPU's name or size below "
                "(e.g. A6000, H100 80GB, 48GiB)"
            )
        raise UserError("the GPU size is not known yet (waiting for the first GPU sample)")
    version = inputs.version or "0.5.11"
    spec = spec_from_values(values, version=inputs.flags or version)
    facts = model_facts_from_config(inputs.model_config, weight_bytes=inputs.weight_bytes)
    if inputs.live and inputs.free_gib is None:
        from sgtui.core.preflight import fit_on_target, free_now_note

        live = list(inputs.live)
        report = fit_on_target(spec, facts, live, version=version, n_gpus=inputs.n_gpus)
        out = report.to_json()
        out["free_now"] = free_now_note(live)
    else:
        gpu = GpuSpec(inputs.gpu_name or "GPU", inputs.gpu_mib)
        report = fit(spec, facts, gpu, n_gpus=inputs.n_gpus, version=version, free_gib=inputs.free_gib)
        out = report.to_json()
    out["warnings"] = [
        {
            "code": w.code,
            "message": w.message,
            "flag": getattr(w, "flag", None),
            "suggested_value": getattr(w, "suggested_value", None),
        }
        for w in report.warnings
    ]
    return out


def hints_from_report(report: dict[str, Any] | None) -> dict[str, tuple[str, Any]]:
    """flag -> (warning, suggested value): what the form shows under each field."""
    hints: dict[str, tuple[str, Any]] = {}
    for w in (report or {}).get("warnings") or []:
        flag = w.get("flag")
        if flag and flag not in hints:
            hints[flag] = (str(w.get("message", "")), w.get("suggested_value"))
    return hints
