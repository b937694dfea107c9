"""The Flags tab: the deployment's flags with the memory fit beside them, refitted as you type."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.timer import Timer
from textual.widgets import Input

from sgtui.ui import messages as m
from sgtui.ui import profile_ops
from sgtui.ui.catalogue import parse_flag_text
from sgtui.ui.fitting import FitInputs, hints_from_report
from sgtui.ui.session.deployment import Deployment
from sgtui.ui.widgets.fit_panel import FIX_FLAGS_FIRST, FitPanel
from sgtui.ui.widgets.launch_form import LaunchForm
from sgtui.ui.workers.controller import Controller

FIT_DEBOUNCE_S = 0.25
FitFunction = Callable[[dict[str, Any], FitInputs], dict[str, Any]]


class FlagsPane(Horizontal):
    def __init__(
        self, deployment: Deployment, controller: Controller, fit_function: FitFunction, **kwargs: object
    ) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.deployment = deployment
        self.controller = controller
        self.fit_function = fit_function
        self._fit_timer: Timer | None = None
        self._rebuilding = asyncio.Lock()
        self._form = self._new_form()
        self.fit_error = ""  # why the fit panel shows no verdict ("fix the flags first: ...")

    def compose(self) -> ComposeResult:
        yield self._form
        with VerticalScroll(id="fit-scroll"):
            yield FitPanel(id="fit")
            yield Input(placeholder="GPU: name or size (A6000, 48GiB)", id="fit-gpu", classes="-hidden")

    def show_gpu_input(self) -> None:
        """The host cannot name its GPUs: let the user type one for the fit."""
        self.query_one("#fit-gpu", Input).remove_class("-hidden")

    @on(Input.Submitted, "#fit-gpu")
    def _gpu_typed(self, event: Input.Submitted) -> None:
        from sgtui.core.errors import UserError
        from sgtui.core.gpus import parse_gpu

        event.stop()
        try:
            spec = parse_gpu(event.value)
        except UserError as exc:
            self.app.notify(str(exc).replace("--gpu ", "GPU "), severity="error", timeout=10)
            return
        self.deployment.set_gpu(spec.name, spec.mib, typed=True)
        self.app.notify(f"the fit sizes {spec.name} ({spec.mib:,} MiB)", timeout=5)
        self.schedule_fit()

    def _new_form(self) -> LaunchForm:
        d = self.deployment
        return LaunchForm(
            d.catalogue,
            profile_ops.values(d.profile),
            parser=lambda info, text: parse_flag_text(info, text, d.flags),
            id="form",
        )

    @property
    def form(self) -> LaunchForm:
        """The form in use. While a rebuild swaps it, still the one being replaced (its values are the
        ones carried over) until the new one is mounted whole: never none, never a half-composed one."""
        return self._form

    async def rebuild(self, keep_edits: bool = True) -> None:
        """A new form for the deployment's version; `keep_edits` carries the typed values over (a version
        change), otherwise the profile's own values show (a profile was opened)."""
        async with self._rebuilding:  # one at a time: two interleaved would leave two forms
            if not self.is_attached or self._form.catalogue is self.deployment.catalogue:
                return  # shutting down, or already showing these flags (a version and its table both ask)
            # a field with an error keeps its last good value and, in the new form, its text
            typed = self.deployment.keep_form(self._form) if keep_edits else {}
            new = self._new_form()
            if keep_edits:
                new.keep_saved(self._form)
            await self._form.remove()
            if not (self.is_attached and self.app.is_running):  # the app began to exit meanwhile
                return
            await self.mount(new, before="#fit-scroll")
            self._form = new
            new.retype(typed)
        self.schedule_fit()  # the new form's own fit (one started meanwhile waited for it)

    # the fit -------------------------------------------------------------------------------------------
    @on(LaunchForm.Edited)
    def _form_edited(self) -> None:
        self.schedule_fit()

    @on(LaunchForm.AddFailed)
    def _add_failed(self, event: LaunchForm.AddFailed) -> None:
        event.stop()
        self.app.notify(event.message, severity="error", timeout=8)

    def schedule_fit(self) -> None:
        if self._fit_timer is not None:
            self._fit_timer.stop()
        self._fit_timer = self.set_timer(FIT_DEBOUNCE_S, self._start_fit)

    def _start_fit(self) -> None:
        if not (self.is_attached and self.app.is_running):  # a debounce timer firing during shutdown
            return
        if self._rebuilding.locked():  # the form is being rebuilt for another version: it fits when done
            return
        d = self.deployment
        d.fit_generation += 1
        errors = self.form.errors()
        if errors:  # a fit of other flags than the ones shown would be a lie
            d.fit_report = None
            self._show_fit(None, f"{FIX_FLAGS_FIRST}: {next(iter(errors.values()))}")
            return
        values, fit = self.form.values(), self.fit_function
        model = values.get("--model-path")
        if model and d.model_for is not None and str(model) != d.model_for and d.host:
            d.forget_model(str(model))  # re-read the model the flags now name
            self.controller.model_config(d.host, d.target, str(model))
        inputs = d.fit_inputs
        self.controller.compute_fit(lambda: fit(values, inputs), d.fit_generation, self.post_message)

    def _show_fit(self, report: dict[str, Any] | None, error: str) -> None:
        self.fit_error = error
        self.query_one(FitPanel).show(report, error)
        draw = getattr(self.app, "draw_status", None)
        if draw is not None:
            draw()

    async def on_fit_computed(self, message: m.FitComputed) -> None:
        message.stop()
        d = self.deployment
        if message.generation != d.fit_generation or not (self.is_attached and self.app.is_running):
            return
        d.fit_report = message.report
        self._show_fit(message.report, message.error)
        # a form being replaced (rebuilt for another version) is left alone: its successor gets its own fit
        form = self._form
        if form.is_attached and form.is_mounted and not self._rebuilding.locked():
            await form.set_hints(hints_from_report(message.report))

    def prediction(self) -> dict[str, Any] | None:
        """The fit for exactly the flags being launched (the debounced panel may lag a fresh edit)."""
        return self.predict()[0]

    def predict(self) -> tuple[dict[str, Any] | None, str]:
        """(the fit for exactly the flags being launched, "") or (None, why it cannot be computed yet: no
        GPU sample, no nvidia-smi, the model config not read); never a stale report."""
        d = self.deployment
        try:
            report = self.fit_function(self.form.values(), d.fit_inputs)
        except Exception as exc:  # no model config or GPU size yet: compare against nothing rather than stale
            return None, str(exc) or type(exc).__name__
        d.fit_report = report
        return report, ""

    def launch_problems(self) -> list[str]:
        errors = self.form.errors()
        if errors:
            return list(errors.values())
        from sgtui.core.errors import UserError
        from sgtui.core.sglang.flags import FlagError, spec_from_values

        try:
            spec_from_values(self.form.values(), version=self.deployment.flags)
        except FlagError as exc:
            if exc.flag:
                self.form.set_field_error(exc.flag, str(exc))
            return [str(exc)]
        except UserError as exc:
            return [str(exc)]
        return []
