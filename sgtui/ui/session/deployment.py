"""The deployment being prepared: the profile, its target, the target's SGLang version and the fit."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from sgtui.ui import profile_ops
from sgtui.ui.catalogue import flag_catalogue, flag_table_label
from sgtui.ui.fitting import FitInputs
from sgtui.ui.views import ContainerView
from sgtui.ui.widgets.launch_form import FlagInfo

# memory in use on a GPU that moved by less than this keeps the fit as it is (no refit every sample)
LIVE_CHANGE_MIB = 256.0


class Deployment:
    """What `l` would launch. The flags form edits `profile`'s values; the fit reads `fit_inputs`,
    gathered from the target as it becomes known (model config, GPU size, version)."""

    def __init__(self, profile: Any, path: Path | None) -> None:
        self.profile = profile
        self.path = path
        self.version: str | None = profile_ops.declared_version(profile)
        self.flag_table: Any = None  # the target's own FlagTable once read; else the shipped one
        self.catalogue: dict[str, FlagInfo] = flag_catalogue(self.version)
        self.fit_inputs = FitInputs(n_gpus=profile_ops.gpu_count(profile), version=self.version)
        self.fit_report: dict[str, Any] | None = None
        self.fit_generation = 0
        self.gpu_typed = False
        self.model_for: str | None = None  # the --model-path whose config.json the fit has (or awaits)

    @property
    def host(self) -> str:
        return profile_ops.host(self.profile)

    @property
    def target(self) -> ContainerView | None:
        return profile_ops.container(self.profile)

    @property
    def target_label(self) -> str:
        return profile_ops.target_label(self.profile)

    @property
    def python(self) -> str:
        return profile_ops.python(self.profile)

    @property
    def name(self) -> str:
        return profile_ops.name(self.profile)

    @property
    def flags(self) -> Any:
        """What the form, validation and the launch argv use: the target's table, else the version."""
        return self.flag_table or self.version

    @property
    def title(self) -> str:
        """The header's sub-title: the profile and which flag table is in use."""
        return self.name + (f" · flags {flag_table_label(self.flags)}" if self.version else "")

    def open(self, profile: Any, path: Path | None) -> None:
        """Another profile: its own version and GPU count; nothing learnt from the old target carries over."""
        self.__init__(profile, path)  # type: ignore[misc]

    def retarget(self, host: str, container: ContainerView) -> None:
        same_host = host == self.host
        self.profile = profile_ops.with_target(self.profile, host, container)
        self.fit_inputs = dataclasses.replace(
            self.fit_inputs if same_host else FitInputs(n_gpus=self.fit_inputs.n_gpus),
            model_config=None,
            weight_bytes=None,
            version=None,
            model_error="",
            flags=None,
        )
        self.version = None
        self.set_flag_table(None)

    def set_version(self, version: str) -> bool:
        """True when the form must be rebuilt for another version's flags."""
        changed = version != self.version
        self.version = version
        if changed:
            self.set_flag_table(None)
            self.catalogue = flag_catalogue(version)
        self.fit_inputs = dataclasses.replace(self.fit_inputs, version=version, flags=self.flag_table)
        return changed

    def set_flag_table(self, table: Any) -> bool:
        """The target's own flag table (None: back to the shipped one); True when the form must follow.
        A table read for another version than the one now detected is ignored."""
        if table is not None and (getattr(table, "source", None), table.version) != ("target", self.version):
            return False
        self.flag_table = table
        self.profile = profile_ops.with_flag_table(self.profile, table)
        self.fit_inputs = dataclasses.replace(self.fit_inputs, flags=table)
        self.catalogue = flag_catalogue(self.flags)
        return table is not None

    def set_model(self, got: dict[str, Any] | None, error: str = "") -> None:
        if got is None:
            self.fit_inputs = dataclasses.replace(self.fit_inputs, model_error=error)
            return
        self.fit_inputs = dataclasses.replace(
            self.fit_inputs,
            model_config=got.get("config"),
            weight_bytes=got.get("weight_bytes"),
            model_error="",
        )

    def forget_model(self, model_path: str) -> None:
        """--model-path changed: the old model's config no longer sizes anything."""
        self.model_for = model_path
        self.fit_inputs = dataclasses.replace(
            self.fit_inputs,
            model_config=None,
            weight_bytes=None,
            model_error=f"reading {model_path}/config.json on the target…",
        )

    def set_gpu(self, name: str, mib: int, typed: bool = False) -> bool:
        """The first usable GPU sample of the target's host sizes the fit (or the GPU the user typed,
        which a sample never overrides); True when it changed now."""
        if self.fit_inputs.gpu_mib is not None and not typed:
            return False
        self.gpu_typed = self.gpu_typed or typed
        live = () if self.gpu_typed else self.fit_inputs.live  # a typed GPU is not the one nvidia-smi reads
        self.fit_inputs = dataclasses.replace(
            self.fit_inputs, gpu_mib=mib, gpu_name=name, gpu_error="", live=live
        )
        return True

    def set_live(self, gpus: list[Any]) -> bool:
        """A GPU sample of the target's host: the GPUs the launch asks for (the headless preflight's
        choice, `remote.preflight.run_gpu_indices`) with the memory in use on them now, so the fit is
        sized from what is free (`core.preflight.fit_on_target`). True when the fit must be made again:
        the first reading, or memory in use that moved by more than `LIVE_CHANGE_MIB` on some GPU."""
        from sgtui.core.errors import UserError
        from sgtui.core.preflight import LiveGpu
        from sgtui.remote.preflight import run_gpu_indices

        if self.gpu_typed:
            return False
        have = {g.index: g for g in gpus if not g.note and g.total_mib}
        try:
            wanted = run_gpu_indices(self.profile)
        except UserError:  # flags that do not parse: the form says so, the fit waits for them
            return False
        if not wanted or any(i not in have for i in wanted):
            return False
        live = tuple(LiveGpu(i, have[i].name, have[i].total_mib, float(have[i].used_mib)) for i in wanted)
        old = self.fit_inputs.live
        if [g.index for g in old] == wanted and all(
            abs((a.used_mib or 0.0) - (b.used_mib or 0.0)) <= LIVE_CHANGE_MIB
            for a, b in zip(old, live, strict=True)
        ):
            return False
        self.fit_inputs = dataclasses.replace(self.fit_inputs, live=live)
        return True

    def set_gpu_problem(self, note: str) -> bool:
        """The host cannot say what its GPUs are: the fit says why instead of waiting forever."""
        if self.fit_inputs.gpu_mib is not None or self.fit_inputs.gpu_error == note:
            return False
        self.fit_inputs = dataclasses.replace(self.fit_inputs, gpu_error=note)
        return True

    def keep_form(self, form: Any) -> dict[str, str]:
        """The form's values into the profile; a field with an error keeps the profile's value for it (a
        save or a rebuild never drops a flag because its field holds a typo). Returns the text typed into
        such fields (a rebuilt form shows it again)."""
        values, typed = form.carried(profile_ops.values(self.profile))
        self.keep_values(values)
        return dict(typed)

    def keep_values(self, values: dict[str, Any]) -> None:
        edited = profile_ops.with_values(self.profile, values)
        self.profile = profile_ops.with_flag_table(edited, self.flag_table)
