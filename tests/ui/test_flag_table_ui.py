"""The form follows the target's own flag table: a flag only the target's SGLang has is offered, typed and
launched; the header says which table is in use; a failed read is one warning and the shipped table."""

from __future__ import annotations

from typing import Any

from sgtui.core.profiles import Profile
from sgtui.core.sglang.flags import table_for
from sgtui.ui.app import SgtuiApp
from sgtui.ui.widgets.launch_form import LaunchForm
from tests.ui.conftest import launch_anyway, wait_for
from tests.ui.fakes import FakeBackend

SIZE = (120, 40)
EXTRA = {"options": ["--target-only-knob"], "dest": "target_only_knob", "kind": "int", "help": "only here"}


def target_rows(version: str) -> list[dict[str, Any]]:
    """The shipped table for `version` plus one flag no shipped release has, as the payload prints it."""
    table = table_for(version)
    rows = [
        {"options": list(d.options), "kind": d.kind, "nargs": d.nargs, "default": d.default}
        for d in table.defs.values()
    ]
    return [*rows, EXTRA]


async def test_the_form_validation_and_launch_follow_the_targets_table(profile: Profile) -> None:
    backend = FakeBackend(target_flag_rows=target_rows("0.5.9"))
    app = SgtuiApp(backend, profile, theme="textual-dark")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.flag_table is not None, what="the target's table")
        assert app.sub_title.endswith("flags from the target (0.5.9)")
        # app.form is the form in use: the one for the target's table once it is mounted whole
        await wait_for(pilot, lambda: "--target-only-knob" in app.form.catalogue, what="the rebuilt form")
        form = app.form
        assert form.is_mounted and app.query_one(LaunchForm) is form
        assert (
            form.catalogue["--target-only-knob"].known
            and form.catalogue["--target-only-knob"].help == "only here"
        )
        await form.set_flag("--target-only-knob", 3)
        # the fit types the form's values with the same table (a flag only the target has is no error)
        await wait_for(pilot, lambda: app.fit_inputs.flags is app.flag_table, what="the fit's table")
        assert app.fit_function(form.values(), app.fit_inputs)["sglang_version"] == "0.5.9"
        await launch_anyway(pilot, app)  # the fit says 0.5.9 fails here, so sgtui asks first: launch anyway
        await wait_for(pilot, lambda: backend.launched, what="launch")
        launched = backend.launched[0]
        assert launched.argv[-2:] == ["--target-only-knob", "3"]


async def test_a_failed_read_warns_once_and_keeps_the_shipped_table(profile: Profile) -> None:
    problem = "could not read SGLang's flags from /opt/sglang/venv/bin/python on pve pct 129 (timeout)"
    backend = FakeBackend(flag_table_problem=problem)
    app = SgtuiApp(backend, profile, theme="textual-dark")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: any(problem in n.message for n in app._notifications), what="warning")
        assert app.flag_table is None
        assert app.sub_title.endswith("flags shipped 0.5.9")
