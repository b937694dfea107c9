"""The launch-flag form: the profile's flags in groups, typed inputs, per-field errors and fit hints.

Values leave the form typed (int, float, bool, list, dict) in SGLang's `--config` mapping shape, keyed by
the canonical dashed flag name, so the profile can be saved and handed to SGLang unchanged.
"""

from __future__ import annotations

import difflib
from typing import Any

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.suggester import SuggestFromList
from textual.widget import Widget
from textual.widgets import Checkbox, Input, Label, Static

from sgtui.core.sglang.flags import GROUPS
from sgtui.ui.widgets.flag_values import FlagInfo, Parser, field_id, format_value, parse_value

__all__ = ["FlagField", "FlagInfo", "LaunchForm", "Parser", "field_id", "format_value", "parse_value"]


class FlagField(Vertical):
    """One flag: its input, then its error or the fit's warning with the suggested value."""

    BINDINGS = [Binding("ctrl+y", "apply_hint", "apply suggestion", id="apply-hint")]

    DEFAULT_CSS = """
    FlagField { height: auto; }
    FlagField > Horizontal { height: 1; }
    FlagField .flag-name { width: 33; color: $text-muted; }
    FlagField:focus-within { background: $boost; }
    FlagField:focus-within .flag-name { color: $accent; text-style: bold; }
    FlagField:focus-within Input { text-style: bold; }
    FlagField Input { width: 1fr; }
    FlagField.-invalid Input { color: $error; text-style: bold; }
    FlagField > .flag-note { height: auto; padding-left: 2; }
    """

    def __init__(self, info: FlagInfo, value: Any, parser: Parser | None = None) -> None:
        super().__init__(id=field_id(info.name), classes="flag-field")
        self.info = info
        self.parser: Parser = parser or parse_value
        self.hint: tuple[str, Any] | None = None
        self.error = ""
        if info.kind == "bool":
            self.control: Input | Checkbox = Checkbox(Text(info.name), bool(value), compact=True)
        else:
            self.control = Input(
                format_value(value),
                placeholder="(SGLang's default)",
                compact=True,
                suggester=SuggestFromList(list(info.choices), case_sensitive=True) if info.choices else None,
                tooltip=Text(info.help) if info.help else None,
            )
        self.note = Static("", classes="flag-note")

    def compose(self) -> ComposeResult:
        with Horizontal():
            if isinstance(self.control, Input):
                yield Label(Text(self.info.name), classes="flag-name")
            yield self.control
        yield self.note

    def on_mount(self) -> None:
        self._validate()
        self._draw_note()

    @property
    def value(self) -> Any:
        if isinstance(self.control, Checkbox):
            return True if self.control.value else None
        try:
            return self.parser(self.info, self.control.value)
        except ValueError:
            return None

    def set_value(self, value: Any) -> None:
        if isinstance(self.control, Checkbox):
            self.control.value = value is True or str(value).lower() in ("true", "1", "yes", "on")
        else:
            self.control.value = format_value(value)
        self._validate()
        self._draw_note()

    def set_hint(self, hint: tuple[str, Any] | None) -> None:
        self.hint = hint
        self._draw_note()

    def set_error(self, message: str) -> None:
        self.error = message
        self.set_class(bool(message), "-invalid")
        self._draw_note()

    def _validate(self) -> None:
        if isinstance(self.control, Checkbox):
            self.set_error("")
            return
        try:
            self.parser(self.info, self.control.value)
        except ValueError as exc:
            self.set_error(f"{self.info.name}: {exc}")
        else:
            self.set_error("")

    def _draw_note(self) -> None:
        text = Text()
        if self.error:
            text.append(self.error, style="bold red")
        elif not self.info.known:
            text.append("not known to the target's SGLang version: it would refuse to start", style="yellow")
        if self.hint is not None:
            message, suggested = self.hint
            if text:
                text.append("\n")
            text.append("⚠ " + message, style="yellow")
            if suggested is not None:
                text.append(f"  ctrl+y → {format_value(suggested)}", style="bold cyan")
        self.note.update(text)
        self.note.display = bool(text)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "apply_hint":
            return self.hint is not None and self.hint[1] is not None
        return True

    def action_apply_hint(self) -> None:
        if self.hint is not None and self.hint[1] is not None:
            self.set_value(self.hint[1])
            self.hint = None
            self._draw_note()
            self.post_message(LaunchForm.Edited())

    @on(Input.Changed)
    @on(Checkbox.Changed)
    def _changed(self, event: Message) -> None:
        self._validate()
        self.post_message(LaunchForm.Edited())


class LaunchForm(VerticalScroll):
    """Fields grouped like SGLang's own help; an "add a flag" input with completion at the bottom.

    Keys: up/down (and tab/shift+tab) move between fields, with the focused field highlighted; esc leaves
    a field for the form itself, and the next up/down/tab continues from the field left, not the first.
    `dirty` says whether any value differs from the one loaded (quitting then asks)."""

    BINDINGS = [
        Binding("up", "move(-1)", "previous field", show=False, id="form-previous"),
        Binding("down", "move(1)", "next field", show=False, id="form-next"),
        Binding("tab", "move(1, True)", "next field", show=False, id="form-tab"),
        Binding("shift+tab", "move(-1, True)", "previous field", show=False, id="form-back-tab"),
    ]

    class Edited(Message):
        """A field changed (the app debounces and recomputes the fit)."""

    class AddFailed(Message):
        def __init__(self, message: str) -> None:
            super().__init__()
            self.message = message

    DEFAULT_CSS = """
    LaunchForm > .group-title { text-style: bold; color: $accent; }
    LaunchForm #add-flag { margin-top: 1; }
    """

    def __init__(
        self,
        catalogue: dict[str, FlagInfo],
        values: dict[str, Any],
        parser: Parser | None = None,
        **kwargs: object,
    ) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.catalogue = catalogue
        self.parser: Parser = parser or parse_value
        self._initial = dict(values)
        self._fields: dict[str, FlagField] = {}
        self._last_control: Widget | None = None
        self._baseline: dict[str, Any] | None = None

    def info_for(self, flag: str) -> FlagInfo:
        return self.catalogue.get(flag) or FlagInfo(flag, known=False)

    def compose(self) -> ComposeResult:
        by_group: dict[str, list[FlagField]] = {}
        for flag, value in self._initial.items():
            info = self.info_for(flag)
            fld = FlagField(info, value, self.parser)
            self._fields[flag] = fld
            by_group.setdefault(info.group if info.group in GROUPS else "other", []).append(fld)
        for group in GROUPS:
            if group in by_group:
                yield Static(
                    group, classes="group-title", id="group-" + group.replace("/", "-").replace(" ", "-")
                )
                yield from by_group[group]
        yield Input(
            placeholder="add a flag: --name value",
            suggester=SuggestFromList(sorted(self.catalogue), case_sensitive=False),
            id="add-flag",
        )

    def on_mount(self) -> None:
        if self._baseline is None:  # a rebuilt form was handed the saved values: its edits stay unsaved
            self.call_after_refresh(self.mark_saved)

    def mark_saved(self) -> None:
        """The values now shown are the saved ones (just loaded, or just written to the profile)."""
        self._baseline = self.values()

    def keep_saved(self, other: LaunchForm) -> None:
        """Before mount: what counts as saved is what did in `other` (the form this one replaces)."""
        self._baseline = other._baseline

    @property
    def dirty(self) -> bool:
        return self._baseline is not None and self.values() != self._baseline

    def controls(self) -> list[Widget]:
        return [w for w in self.query("Input, Checkbox") if w.display and w.focusable]

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        if isinstance(event.widget, Input | Checkbox):
            self._last_control = event.widget

    def action_move(self, delta: int, leave: bool = False) -> None:
        """To the next/previous field; from the form itself, on from the field last left. With `leave`
        (tab), moving past either end leaves the form as tab does elsewhere."""
        controls = self.controls()
        focused = self.app.focused
        if focused in controls:
            index = controls.index(focused) + delta
        elif self._last_control in controls:
            index = controls.index(self._last_control) + delta
        else:
            index = 0 if delta > 0 else len(controls) - 1
        if not controls or (leave and not 0 <= index < len(controls)):
            if delta > 0:
                self.screen.focus_next()
            else:
                self.screen.focus_previous()
            return
        target = controls[max(0, min(index, len(controls) - 1))]
        target.focus()
        self.scroll_to_widget(target, animate=False)

    def values(self) -> dict[str, Any]:
        """The typed values in form order; fields left empty are omitted (SGLang's default applies)."""
        out: dict[str, Any] = {}
        for flag, fld in self._fields.items():
            v = fld.value
            if v is not None:
                out[flag] = v
        return out

    def errors(self) -> dict[str, str]:
        return {flag: fld.error for flag, fld in self._fields.items() if fld.error}

    def carried(self, last_good: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
        """What a rebuilt form carries over, in form order: the values, a field with an error keeping
        `last_good`'s value for it (never dropped: the profile would launch without the flag); and the
        text typed into each such field, to put back in the new form with its error."""
        values: dict[str, Any] = {}
        typed: dict[str, str] = {}
        for flag, fld in self._fields.items():
            if fld.error and isinstance(fld.control, Input):
                typed[flag] = fld.control.value
                if last_good.get(flag) is not None:
                    values[flag] = last_good[flag]
            elif (v := fld.value) is not None:
                values[flag] = v
        return values, typed

    def retype(self, typed: dict[str, str]) -> None:
        """Put back text typed into fields before a rebuild (shown with its error, as it was)."""
        for flag, text in typed.items():
            fld = self._fields.get(flag)
            if fld is not None and isinstance(fld.control, Input):
                fld.control.value = text
                fld._validate()

    def field(self, flag: str) -> FlagField | None:
        return self._fields.get(flag)

    async def set_hints(self, hints: dict[str, tuple[str, Any]]) -> None:
        """Show each warning under its flag; a flag the form lacks gets an empty field to carry it."""
        for flag, (_message, suggested) in hints.items():
            # replaced meanwhile (another version's form: its own fit brings hints), or not composed yet
            if not (self.is_attached and self.is_mounted):
                return
            if flag not in self._fields and flag in self.catalogue and suggested is not None:
                fld = FlagField(self.catalogue[flag], None, self.parser)
                self._fields[flag] = fld
                await self.mount(fld, before=self.query_one("#add-flag"))
        for flag, fld in self._fields.items():
            fld.set_hint(hints.get(flag))

    def set_field_error(self, flag: str, message: str) -> None:
        if flag in self._fields:
            self._fields[flag].set_error(message)

    async def set_flag(self, flag: str, value: Any) -> FlagField:
        """Set a flag's value, adding its field when the form does not show it yet."""
        fld = self._fields.get(flag)
        if fld is None:
            fld = FlagField(self.info_for(flag), value, self.parser)
            self._fields[flag] = fld
            if self.is_attached:  # a form taken down meanwhile (the app exiting) keeps the value unshown
                await self.mount(fld, before=self.query_one("#add-flag"))
        else:
            fld.set_value(value)
        self.post_message(self.Edited())
        return fld

    @on(Input.Submitted, "#add-flag")
    async def _add_flag(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        if not text:
            return
        name, _, rest = text.partition(" ")
        if not name.startswith("--"):
            name = "--" + name
        name = name.replace("_", "-")
        if name not in self.catalogue:
            close = difflib.get_close_matches(name, list(self.catalogue), n=3, cutoff=0.75)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            self.post_message(self.AddFailed(f"{name} is not an SGLang flag{hint}"))
            return
        info = self.catalogue[name]
        try:
            value = True if info.kind == "bool" else self.parser(info, rest)
        except ValueError as exc:
            self.post_message(self.AddFailed(f"{name}: {exc}"))
            return
        event.input.value = ""
        fld = await self.set_flag(name, value)
        if isinstance(fld.control, Input) and value is None:
            fld.control.focus()
