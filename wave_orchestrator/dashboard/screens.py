"""The dashboard's small windows over the fleet: confirm with `y`, type an answer, pick a wave
or a lane, read the keys. Each gives back what the person chose; the app acts on it.

What they show comes from state files an agent can write: plain text, never markup (a
``[/]`` would end the console, a ``[@click=...]`` run an action on a click) and never an
escape sequence, whatever the caller passed."""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen, Screen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from ..sanitize import strip_controls

MODAL_CSS = """
Confirm, Ask, PickWave, PickLane, Keys { align: center middle; }
#box {
    width: 76; max-width: 100%; height: auto; max-height: 100%;
    border: round $accent; padding: 0 1; background: $surface;
}
"""

# Every key of the console, in the order `?` shows them (docs/operating.md lists the same).
KEYS = (
    ("↑ ↓  j k", "move between agents"),
    ("l  PgUp PgDn", "the agent's live output (follows); page up, down a pane"),
    ("p", "preview the selected agent's output beside the table"),
    ("d", "the agent's diff (its branch, or its owned paths)"),
    ("Enter", "attach to its tmux session (detach: C-b d)"),
    ("s", "stop the agent (asks y)"),
    ("r", "rerun the agent (asks y)"),
    ("C", "the agent goes on in its conversation, told what you type"),
    ("a", "answer its open question"),
    ("c", "send it a comment"),
    ("o", "sort: state, elapsed, cost, attempts, id, wave order"),
    ("w", "switch wave"),
    ("L", "switch lane"),
    ("O", "the launcher's log (follows)"),
    ("b", "the wave's coordination board"),
    ("e", "the lane's event timeline (follows)"),
    ("G R S", "start (in the background), resume, stop the lane (ask y)"),
    ("/", "filter agents; in a pane: find text"),
    ("n N", "next, previous match in the pane"),
    ("Esc", "close the pane or the filter"),
    ("?", "these keys"),
    ("q", "quit"),
)


def plain(text: str) -> Static:
    """A Static that shows ``text`` as it is: no markup parsed, no escape passed on."""
    return Static(Content(strip_controls(text, newlines=True)), markup=False)


class Beneath(Screen[None]):
    """The console's own screen. Keys are queued to the focused widget as they arrive, so a key
    typed while a window opens over it (`a` then the answer, without waiting) still passes here
    and reaches the app after the window is up: it is the window's (``late``), never an action
    of the console beneath, nor a key of the window's field applied without its letters."""

    def __init__(self) -> None:
        super().__init__(id="_default")
        self._passed: set[int] = set()  # the keys on their way to the app from here

    def on_key(self, event: events.Key) -> None:
        if self.is_current:
            self._passed.add(id(event))
            return
        event.stop()
        event.prevent_default()
        late(self.app.screen, event)

    def came_here(self, event: events.Key) -> bool:
        """Whether ``event`` reached the app from this screen (asked once per key)."""
        if id(event) in self._passed:
            self._passed.discard(id(event))
            return True
        return False


def late(window: Screen[object], event: events.Key) -> None:
    """A key typed for ``window`` before it showed: into a text box, else dropped (a stray key
    must never answer a confirmation)."""
    if isinstance(window, Ask):
        window.typed(event)


class Confirm(ModalScreen[bool]):
    """`y` does it; any other key leaves things as they are (a stray key never stops an agent)."""

    CSS = MODAL_CSS

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="box"):
            yield plain(self.question)
            yield Static("y: yes   any other key: no", classes="hint", markup=False)

    def on_key(self, event: events.Key) -> None:
        event.stop()
        if self.is_current:  # keys typed fast may arrive after the first one closed it
            self.dismiss(event.key == "y")


class Field(Input):
    """A text field that acts on BSpace and Enter where the letters are typed, in order: as
    Input's bindings they go round by the app first, so in a burst of keys (typed fast, or
    while the console was busy) the letters after them got in first (``ab``, BSpace, ``c``
    left ``a``+``b`` and lost the ``c``)."""

    async def on_key(self, event: events.Key) -> None:
        if event.key not in ("backspace", "enter"):
            return
        event.stop()
        event.prevent_default()
        if event.key == "backspace":
            self.action_delete_left()
        else:
            await self.action_submit()


class Ask(ModalScreen[str | None]):
    """One line of text from the person (an answer, a comment, a filter); Esc gives up."""

    CSS = MODAL_CSS
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "give_up", "cancel")]

    def __init__(self, title: str, prompt: str = "", value: str = "") -> None:
        super().__init__()
        self.title_text, self.prompt, self.value = title, prompt, value

    def compose(self) -> ComposeResult:
        with Vertical(id="box"):
            yield plain(self.title_text)
            if self.prompt:
                yield plain(self.prompt)
            yield Field(value=self.value, placeholder="Enter sends, Esc cancels")

    def on_key(self, event: events.Key) -> None:
        """A key that reaches the box while its field has no focus yet goes into the field."""
        if not self.query_one(Input).has_focus:
            event.stop()
            event.prevent_default()
            self.typed(event)

    def typed(self, event: events.Key) -> None:
        """``event`` as the field would take it: a person types on without waiting for the box,
        and what they typed before it showed belongs in it (a letter for the console beneath
        would run an action there, and the text would be lost)."""
        if not self.is_current:
            return
        field = self.query_one(Input)
        field.focus()
        if event.key == "escape":
            self.action_give_up()
        elif event.key == "enter":
            self.dismiss(field.value.strip())
        elif event.key == "backspace":
            field.action_delete_left()
        elif event.is_printable and event.character:
            field.insert_text_at_cursor(event.character)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip())

    def action_give_up(self) -> None:
        self.dismiss(None)


class PickWave(ModalScreen[int | None]):
    """The lane's waves with how each stands; Enter shows one."""

    CSS = MODAL_CSS
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,w", "give_up", "cancel")]

    def __init__(self, waves: list[tuple[int, str]], current: int | None) -> None:
        super().__init__()
        self.waves, self.current = waves, current

    def compose(self) -> ComposeResult:
        options = [
            Option(Content(strip_controls(f"wave {n}  {state}")), id=str(n))
            for n, state in self.waves
        ]
        with Vertical(id="box"):
            yield Static("show which wave? (Enter picks, Esc cancels)", markup=False)
            yield OptionList(*options, markup=False)

    def on_mount(self) -> None:
        picker = self.query_one(OptionList)
        numbers = [n for n, _ in self.waves]
        if self.current in numbers:
            picker.highlighted = numbers.index(self.current)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(int(event.option.id or 0))

    def action_give_up(self) -> None:
        self.dismiss(None)


class PickLane(ModalScreen[str | None]):
    """The repository's lanes with how each stands; Enter shows one."""

    CSS = MODAL_CSS
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,L", "give_up", "cancel")]

    def __init__(self, lanes: list[tuple[str, str]], current: str) -> None:
        super().__init__()
        self.lanes, self.current = lanes, current

    def compose(self) -> ComposeResult:
        width = max((len(name) for name, _ in self.lanes), default=0) + 2
        options = [
            Option(Content(strip_controls(f"{name:<{width}}{how}")), id=name)
            for name, how in self.lanes
        ]
        with Vertical(id="box"):
            yield Static("show which lane? (Enter picks, Esc cancels)", markup=False)
            yield OptionList(*options, markup=False)

    def on_mount(self) -> None:
        names = [name for name, _ in self.lanes]
        if self.current in names:
            self.query_one(OptionList).highlighted = names.index(self.current)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_give_up(self) -> None:
        self.dismiss(None)


class Keys(ModalScreen[None]):
    """What each key does; any key closes it."""

    CSS = MODAL_CSS

    def compose(self) -> ComposeResult:
        width = max(len(k) for k, _ in KEYS) + 2
        with Vertical(id="box"):
            yield Static("\n".join(f"{key:<{width}}{what}" for key, what in KEYS), markup=False)

    def on_key(self, event: events.Key) -> None:
        event.stop()
        if self.is_current:
            self.dismiss(None)
