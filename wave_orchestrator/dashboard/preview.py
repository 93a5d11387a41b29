"""The console's live preview: the selected agent's output beside the table (under it on a
narrow terminal), switching as the selection moves, as lazygit and claude-squad show the
item under the cursor. Off until `p`; while on, only the selected agent's log is read, and
only what it appended since."""

from __future__ import annotations

from textual.containers import Horizontal
from textual.content import Content
from textual.widgets import Log

from ..names import AGENT_ID_RE
from ..sanitize import strip_controls
from .agent_rows import conversation_note
from .follow import LogFollower
from .panes import PaneKeys

WIDE = 120  # from this many columns the preview stands beside the table, else under it


ANEW = object()  # what the preview follows when it must look again


class PreviewKeys(PaneKeys):
    """`p` and the preview it toggles; ``FleetConsole`` builds the widgets."""

    preview: Log
    body: Horizontal
    _rebuild: bool

    def _init_preview(self) -> None:
        self._preview: LogFollower | None = None
        self._preview_of: object = ANEW  # the wave and agent it follows (None: no agent)

    def _reset_preview(self) -> None:
        """Whatever it followed is let go: the next look starts anew, even at no agent."""
        self._preview, self._preview_of = None, ANEW

    def action_preview(self) -> None:
        shown = not self.preview.display
        self.preview.display = shown
        self._reset_preview()
        if shown:
            self._place_preview(self.size.width)
            self._follow_preview()
        self._rebuild = True  # the table's room changed
        self._draw()

    def _place_preview(self, width: int) -> None:
        self.body.set_class(width < WIDE, "narrow")

    def _table_room(self, width: int) -> int:
        """The columns the table has: half of them go to a preview beside it."""
        beside = self.preview.display and not self.body.has_class("narrow")
        return width - width // 2 if beside else width

    def _follow_preview(self) -> None:
        """Follow the selected agent's output; a new selection starts from the end of its log."""
        preview = self.preview
        if not preview.display:
            return
        agent = self.selected()
        wave = self.wave
        key = (wave, agent) if wave is not None and agent and AGENT_ID_RE.fullmatch(agent) else None
        if key != self._preview_of:
            self._preview_of = key
            preview.clear()
            self._preview = LogFollower(self.layout.agent(*key).output_log) if key else None
            said = conversation_note(self.data, agent) if key and agent else ""
            title = f"output of {agent}{said} (p hides)" if key else "no agent selected (p hides)"
            preview.border_title = Content(strip_controls(title))  # never markup
        if self._preview is not None and (text := self._preview.read()):
            preview.write_lines(text.split("\n"), scroll_end=preview.is_vertical_scroll_end)
