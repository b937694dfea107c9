"""The log view: follows past any number of lines, pauses on any move up, searches, wraps, opens a line."""

from __future__ import annotations

from textual.app import App, ComposeResult

from sgtui.ui.screens.line import LineScreen
from sgtui.ui.widgets.log_column import LogColumn, status_text
from sgtui.ui.widgets.log_search import SEARCH_SPAN, Search
from sgtui.ui.widgets.log_store import MAX_LINE, LineStore
from sgtui.ui.widgets.log_view import LogView


class PaneApp(App[None]):
    def __init__(self, max_lines: int = 1000) -> None:
        super().__init__()
        self.max_lines = max_lines
        self.opened: list[str] = []

    def compose(self) -> ComposeResult:
        yield LogColumn(max_lines=self.max_lines, id="pane")

    def on_mount(self) -> None:
        self.query_one(LogView).focus()

    def on_log_view_open_line(self, message: LogView.OpenLine) -> None:
        self.opened.append(message.text)
        self.push_screen(LineScreen(message.text, message.number))


def visible(view: LogView) -> list[str]:
    return [view.render_line(y).text.rstrip() for y in range(view.scrollable_content_region.height)]


def status(app: PaneApp) -> str:
    return str(app.query_one("#log-status").render())


# ---- the store ---------------------------------------------------------------------------------------------
def test_the_store_keeps_only_the_last_lines_and_counts_every_one() -> None:
    store = LineStore(max_lines=100)
    for start in range(0, 40_001, 1000):
        store.append(f"line {n}" for n in range(start, min(start + 1000, 40_001)))
    assert store.total == 40_001
    assert len(store.lines) == 100
    assert store.first == store.dropped == 39_901
    assert store.line(40_000) == "line 40000"


def test_a_search_is_a_regex_or_else_the_literal_text() -> None:
    regex = Search.parse(r"err(or)?\b")
    assert regex is not None and not regex.literal and regex.matches("an Error here")
    literal = Search.parse("[/opt/x")  # not a valid regex: searched for as typed
    assert literal is not None and literal.literal and literal.matches("path [/opt/x]")
    assert Search.parse("Error") is not None and not Search.parse("Error").matches("error")  # type: ignore[union-attr]


def test_search_work_per_line_is_capped() -> None:
    search = Search.parse("needle")
    assert search is not None
    assert not search.matches("x" * (SEARCH_SPAN + 10) + "needle")


def test_the_filtered_view_follows_new_matches_and_drops_old_ones() -> None:
    store = LineStore(max_lines=10)
    store.append(["a 1", "b", "a 2"])
    store.set_search("a")
    assert store.view_count == 2
    store.append(["b"] * 9 + ["a 3"])  # "a 2" (line 2) drops off: 13 lines, 10 kept
    assert [store.line(store.view_line_number(i)) for i in range(store.view_count)] == ["a 3"]


def test_wrapped_rows_map_back_to_their_lines() -> None:
    store = LineStore(max_lines=3)
    store.set_wrap(10)
    store.append(["x" * 25, "short", "y" * 10])
    assert store.row_count == 3 + 1 + 1
    assert store.row(2) == (0, 2) and store.row(3) == (1, 0) and store.row(5) is None
    removed = store.append(["z"])
    assert removed == 3 and store.row_count == 3 and store.row(0) == (0, 0)


def test_lines_are_cut_saying_by_how_much() -> None:
    store = LineStore(10)
    store.append(["x" * (MAX_LINE + 5)])
    assert store.lines[0].endswith("[5 more chars]")


# ---- the widget --------------------------------------------------------------------------------------------
async def test_it_follows_past_max_lines_and_shows_the_final_line() -> None:
    """The bug this replaces: Log(max_lines=20_000) stopped scrolling at ~20,000 lines."""
    app = PaneApp(max_lines=2000)
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(LogView)
        app.query_one(LogColumn).set_path("/runs/r1/server.log")
        for start in range(0, 30_000, 500):
            view.append(f"INFO line {n}" for n in range(start, start + 500))
        view.append(["the final line"])
        await pilot.pause()
        assert visible(view)[-1] == "the final line"
        assert view.following
        text = status(app)
        assert "last 2,000 of 30,001 lines" in text  # the earlier ones are dropped here
        assert "whole log /runs/r1/server.log" in text


async def test_any_move_up_pauses_and_end_resumes() -> None:
    app = PaneApp()
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(LogView)
        view.append(f"line {n}" for n in range(200))
        await pilot.pause()
        await pilot.press("up")
        assert not view.following
        assert "paused: End follows" in status(app)
        view.append(["new line"])
        await pilot.pause()
        assert "new line" not in visible(view)  # reading stays put
        await pilot.press("end")
        assert view.following and visible(view)[-1] == "new line"
        await pilot.press("pageup")
        assert not view.following
        await pilot.press("end")
        view.scroll_to(y=view.scroll_y - 3, animate=False)  # the wheel or the scrollbar
        await pilot.pause()
        assert not view.following


async def test_the_cursor_underline_moves_with_the_cursor_and_leaves_no_trace() -> None:
    """A cursor move redraws only the two lines it touches (their cached rows are dropped, the rest kept)."""
    app = PaneApp()
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(LogView)
        view.append(f"line {n}" for n in range(200))
        await pilot.pause()

        def underlined() -> list[str]:
            rows = [view.render_line(y) for y in range(view.scrollable_content_region.height)]
            return [
                row.text.rstrip()
                for row in rows
                if any(seg.style is not None and seg.style.underline for seg in row if seg.text.strip())
            ]

        assert underlined() == []
        await pilot.press("up")  # pauses, the cursor one above the last line
        assert underlined() == ["line 198"]
        await pilot.press("up", "up")
        assert underlined() == ["line 196"]
        await pilot.press("end")  # following again: no cursor
        assert underlined() == []


async def test_paused_lines_stay_put_while_old_ones_drop_off() -> None:
    app = PaneApp(max_lines=100)
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(LogView)
        view.append(f"line {n}" for n in range(100))
        await pilot.pause()
        await pilot.press("pageup")
        before = visible(view)
        view.append(f"more {n}" for n in range(10))
        await pilot.pause()
        assert visible(view) == before


async def test_search_filters_highlights_counts_and_moves_between_matches() -> None:
    app = PaneApp()
    async with app.run_test(size=(100, 24)) as pilot:
        pane = app.query_one(LogColumn)
        view = pane.view
        view.append(["start", "ERROR one", "ok", "ERROR two", "ok", "ERROR three"])
        pane.open_search()
        await pilot.press(*"ERROR")
        await pilot.pause()
        assert visible(view)[:3] == ["ERROR one", "ERROR two", "ERROR three"]
        assert not view.following
        assert "3 of 6 lines match" in status(app)
        strip = view.render_line(0)
        assert any(seg.style is not None and seg.style.reverse for seg in strip if seg.text == "ERROR")
        await pilot.press("enter")  # keeps the filter, back to the view
        assert app.focused is view
        await pilot.press("N")
        assert view.store.line(view.cursor) == "ERROR two"  # type: ignore[arg-type]
        assert "3 of 6 lines match, at 2" in status(app)
        await pilot.press("n")
        assert view.store.line(view.cursor) == "ERROR three"  # type: ignore[arg-type]
        pane.clear_search()
        await pilot.pause()
        assert view.store.view_count == 6


async def test_a_bad_regex_is_searched_literally() -> None:
    app = PaneApp()
    async with app.run_test(size=(100, 24)) as pilot:
        pane = app.query_one(LogColumn)
        pane.view.append(["path [/opt/x]", "other"])
        pane.open_search()
        await pilot.press(*"[/opt")
        await pilot.pause()
        assert visible(pane.view)[0] == "path [/opt/x]"
        assert "(literal)" in status(app)


async def test_w_wraps_long_lines() -> None:
    app = PaneApp()
    async with app.run_test(size=(40, 10)) as pilot:
        view = app.query_one(LogView)
        view.append(["server_args=" + "a" * 100, "last"])
        await pilot.pause()
        assert visible(view)[0].startswith("server_args=")
        await pilot.press("w")
        await pilot.pause()
        rows = visible(view)
        assert "last" in rows and rows.index("last") >= 3
        assert "wrap" in status(app)
        await pilot.press("w")
        assert not view.wrap


async def test_wrapped_rows_fit_the_width_a_scrollbar_leaves() -> None:
    """Wrapping makes more rows than fit, so a vertical scrollbar appears and the text is two columns
    narrower, with no Resize event. The rows wrap at the width on screen: no character is cut off."""
    app = PaneApp()
    async with app.run_test(size=(48, 12)) as pilot:
        view = app.query_one(LogView)
        lines = [f"{n:02d} " + "abcdefghij" * 6 for n in range(6)]  # 63 columns, 6 rows: no vertical bar
        view.append(lines)
        await pilot.pause()
        assert not view.show_vertical_scrollbar
        await pilot.press("w")
        await pilot.pause()
        assert view.show_vertical_scrollbar  # 12 wrapped rows in 11
        assert view.store.wrap_width == view.scrollable_content_region.width
        assert "".join(visible(view)[1:]) == "".join(lines[1:])  # the first row on screen: line 0's tail


async def test_following_ends_on_the_last_row_once_new_lines_bring_scrollbars() -> None:
    """Lines that overflow the view make Textual show its scrollbars in the next layout pass (a row
    shorter, with no Resize event); the end comes from that final geometry, so the last line shows."""
    app = PaneApp()
    async with app.run_test(size=(48, 12)) as pilot:
        view = app.query_one(LogView)
        view.append(["first"])
        await pilot.pause()
        view.append([f"line {n}" for n in range(20)])
        await pilot.pause()
        assert view.show_vertical_scrollbar and view.scroll_y == view.max_scroll_y == 10
        assert view.vertical_scrollbar.position == view.scroll_y  # the thumb is drawn at the end too
        view.append(["x" * 100, "the last line"])
        await pilot.pause()
        assert view.show_horizontal_scrollbar
        assert view.following and view.scroll_y == view.max_scroll_y == 13
        assert view.vertical_scrollbar.position == view.scroll_y
        assert visible(view)[-1] == "the last line"


async def test_enter_opens_the_line_whole_and_a_traceback_with_its_exception() -> None:
    app = PaneApp()
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(LogView)
        view.append(
            [
                "Traceback (most recent call last):",
                '  File "x.py", line 1, in <module>',
                "    import numpy",
                "ModuleNotFoundError: No module named 'numpy'",
                "after",
            ]
        )
        await pilot.press("home", "enter")
        await pilot.pause()
        assert isinstance(app.screen, LineScreen)
        assert app.opened[0].endswith("No module named 'numpy'")
        assert "after" not in app.opened[0]
        await pilot.press("escape")
        assert not isinstance(app.screen, LineScreen)


def test_a_narrow_status_keeps_the_match_position() -> None:
    """At 80 columns the log column has 46 for its status: the count drops "lines", not "at N"."""
    view = LogView()
    view.store.append([f"INFO {n}" for n in range(15_000)] + ["ERROR a", "ERROR b"])
    view.store.set_search("ERROR")
    view.following, view.cursor = False, view.store.match_lines[0]
    assert "2 of 15,002 lines match, at 1" in status_text(view, width=120).plain
    narrow = status_text(view, width=46).plain
    assert narrow == "paused: End follows · 2 of 15,002 match, at 1" and len(narrow) <= 46


def test_the_status_holds_brackets_as_text() -> None:
    view = LogView()
    view.store.append(["x"])
    text = status_text(view, "/var/[bold]/[/]/server.log", 120)
    assert "/var/[bold]/[/]/server.log" in text.plain


async def test_markup_in_log_lines_is_shown_as_typed() -> None:
    app = PaneApp()
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(LogView)
        lines = ["[/]", "[/opt/x]", "[bold]x", "[@click=app.quit]y", "[link=https://e.x]z"]
        view.append(lines)
        await pilot.pause()
        assert visible(view)[: len(lines)] == lines
