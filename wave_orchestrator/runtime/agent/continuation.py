"""Whether an agent's next try continues its conversation or starts afresh, and what a
continued try is told. A continued try is given only the reason it stopped (and a person's
words): its task, and what it read and did, are in the conversation already, so nothing is
paid for twice. A try that cannot continue starts afresh, and says why."""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

from ...agents.conversations import why_not
from ...sanitize import one_line
from .plan import AgentLaunch

MESSAGE_LIMIT = 2000  # a person's words to a continued agent, at most
RERUN_CONTINUE = "a person asked it to go on (`wave rerun --continue`)"


class Carried(NamedTuple):
    """A conversation a new try is to continue: the executor it was had on, its id, why the
    try before stopped, and a person's words to it."""

    executor: str
    conversation: str
    reason: str
    message: str = ""


def continue_or_restart(
    launch: AgentLaunch, conversation: str, reason: str, message: str = ""
) -> tuple[AgentLaunch, str | None]:
    """The next try's launch, continuing ``conversation`` (a try of ``launch``'s executor)
    with ``reason`` and a person's ``message``; and why it starts afresh instead (None when it
    continues)."""
    why = why_not(launch.executor, launch.command.argv)
    if why is None and not conversation:
        why = "its conversation's id is not known"
    if why is not None:  # its whole task again, with why it runs again and the person's words
        fresh = launch.fresh()
        told = fresh.retry_context + afresh_note(reason, message)
        return replace(fresh, retry_context=told), why
    return launch.continued(conversation, continuation_note(reason, message)), None


def afresh_note(reason: str, message: str = "") -> str:
    """What a try that could not continue is told beside its task (its prompt's section)."""
    note = f"## why you are running again\nThe previous run stopped: {one_line(reason)}.\n"
    if message.strip():
        note += f"A person adds:\n{message.strip()[:MESSAGE_LIMIT]}\n"
    return note


def continuation_note(reason: str, message: str = "") -> str:
    """The whole prompt of a continued try."""
    lines = [
        f"The previous run stopped: {one_line(reason)}.",
        "Continue the task; your work so far is in the workspace.",
        "When you are done, print the markers your task asked for, as before.",
    ]
    if message.strip():
        lines += ["", "A person adds:", message.strip()[:MESSAGE_LIMIT]]
    return "\n".join(lines) + "\n"
