"""The console's panes as a person reads them: the launcher's log as time, level, words and
fields (not JSON), every pane's long lines wrapped at its edge (nothing cut unseen), and what a
log line carries shown as plain words, never markup or an escape."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from console_pilot import QuietFleet, until

from wave_orchestrator.dashboard.console_app import FleetConsole
from wave_orchestrator.dashboard.follow import launcher_line
from wave_orchestrator.dashboard.wrapped_log import wrap_line
from wave_orchestrator.state.events import local_clock
from wave_orchestrator.state.layout import StateLayout

FIXTURE = Path(__file__).parents[1] / "fixtures" / "dashboard" / "wave-3.json"
AT = "2026-12-05T19:22:40.577Z"


def test_a_launcher_log_record_reads_as_time_level_words_and_fields() -> None:
    record = {
        "level": "info",
        "logger": "runtime.pool.loop",
        "agent": "api",
        "executor": "local",
        "attempt": 1,
        "title": "Build and review",
        "event": "agent launched",
        "wave": 2,
        "lane": "demo",
        "at": AT,
    }
    said = launcher_line(json.dumps(record))
    clock = local_clock(AT)
    assert said == (
        f'{clock}  info  agent launched  wave 2  api  executor=local attempt=1 title="Build and review"'
    )
    assert launcher_line("not a record {") == "not a record {"


def test_a_launcher_log_record_shows_escapes_and_markup_as_nothing_and_words() -> None:
    record = {"level": "warning", "event": "x\u001b[2Jy", "detail": "[/] [@click=app.quit]\u0007"}
    said = launcher_line(json.dumps(record))
    assert "\u001b" not in said and "\u0007" not in said
    assert "warning" in said and "[/] [@click=app.quit]" in said


def test_wrap_line_keeps_every_character_in_rows_of_the_width() -> None:
    line = "edited " + "/very/long/path" * 20 + " and more words after it"
    rows = wrap_line(line, 40)
    assert all(len(row) <= 40 for row in rows) and len(rows) > 2
    assert "".join(rows).replace(" ", "") == line.replace(" ", "")


def screen_text(app: FleetConsole) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def test_o_shows_the_launcher_log_readably_and_e_wraps_long_event_lines(tmp_path: Path) -> None:
    layout = StateLayout(tmp_path / "state", "main")
    path = layout.dashboard(3)
    path.parent.mkdir(parents=True)
    path.write_text(FIXTURE.read_text())
    long = "w" * 150 + "-END"
    record = {"level": "info", "logger": "l", "event": "wave started", "wave": 3, "at": AT}
    layout.launcher_log.write_text(json.dumps({**record, "title": long}) + "\n")
    event = {"event": "agent_launched", "agent": "api", "wave": 3, "at": AT, "note": long}
    layout.events.write_text(json.dumps(event) + "\n")
    app = FleetConsole(layout, None, QuietFleet())

    async def run() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            await pilot.press("O")
            await until(pilot, lambda: "-END" in screen_text(app), "the launcher's log, whole")
            shown = screen_text(app)
            assert f"{local_clock(AT)}  info  wave started  wave 3" in shown
            assert '{"level"' not in shown and "logger" not in shown
            await pilot.press("escape", "e")
            await until(pilot, lambda: "agent_launched" in screen_text(app), "the events")
            await until(pilot, lambda: "-END" in screen_text(app), "the long event, whole")

    asyncio.run(run())
    assert app.failure is None


def test_l_opens_at_the_log_s_end_follows_it_and_pgup_pgdn_scroll_the_pane(
    tmp_path: Path,
) -> None:
    """A log longer than the pane: `l` shows its end and what is written next; PgUp scrolls
    the pane (not the table) and it stops following; PgDn back to the end follows again."""
    layout = StateLayout(tmp_path / "state", "main")
    path = layout.dashboard(3)
    path.parent.mkdir(parents=True)
    path.write_text(FIXTURE.read_text())
    app = FleetConsole(layout, None, QuietFleet())

    async def run() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            agent = app.selected()
            assert agent is not None
            log = layout.agent(3, agent).output_log
            log.parent.mkdir(parents=True, exist_ok=True)
            log.write_text("".join(f"step {i}/80\n" for i in range(1, 61)))
            row = app.table.cursor_row
            await pilot.press("l")
            await until(pilot, lambda: "step 60/80" in screen_text(app), "the log's end")
            assert "step 1/80\n" not in screen_text(app) + "\n"
            with log.open("a") as fh:
                fh.write("step 61/80\n")
            await until(pilot, lambda: "step 61/80" in screen_text(app), "the next line")
            await pilot.press("pageup")
            await until(pilot, lambda: "step 61/80" not in screen_text(app), "a page up")
            assert app.table.cursor_row == row and not app.pane.is_vertical_scroll_end
            with log.open("a") as fh:
                fh.write("step 62/80\n")
            await pilot.pause(0.6)
            assert "step 62/80" not in screen_text(app)  # scrolled up: it stays where it was
            for _ in range(10):
                await pilot.press("pagedown")
            await until(pilot, lambda: "step 62/80" in screen_text(app), "the end again")

    asyncio.run(run())
    assert app.failure is None


def test_a_line_that_is_no_record_shows_its_words_not_its_escapes() -> None:
    from wave_orchestrator.dashboard.follow import event_line

    for said in (
        launcher_line("torn {\x1b]52;c;ZXZpbA==\x07 line\x1b[2J"),
        event_line("x\x1b[31my"),
    ):
        assert "\x1b" not in said and "\x07" not in said
