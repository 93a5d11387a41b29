"""The console's keys that act on the selected agent: attach, stop, rerun, continue, answer,
comment.
Each runs the cli's own command through the ``Fleet`` (a stop or a rerun after a `y`), so a key
and a command are one behaviour; what a command says back is shown as words, never parsed."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual import work
from textual.app import App

from ..names import AGENT_ID_RE
from ..sanitize import strip_controls
from .fleet import Done, Fleet
from .render import dicts
from .screens import Ask, Confirm

REQUEST_ID_RE = re.compile(r"[A-Za-z0-9][\w.-]{0,63}")  # a question id, as the store makes them
RERUN_REASON = "rerun by a person from the dashboard"
# What tmux says when the agent's session has already ended with its wave.
NO_SESSION = ("can't find session", "no sessions", "no server")


class AgentCommands(App[None]):
    """The keys that change the fleet; ``FleetConsole`` adds what is on screen to them."""

    fleet: Fleet
    wave: int | None  # the wave on screen
    data: dict[str, Any] | None  # its dashboard.json
    alive: bool  # whether a launcher holds the lane
    _seen: tuple[Path | None, float, bool] | None  # what was drawn last (None: draw again)

    def selected(self) -> str | None:
        """The agent under the cursor, if any."""
        raise NotImplementedError

    def action_attach(self) -> None:
        agent = self._agent()
        if agent is None or self.wave is None:
            return
        done = self.fleet.command(["attach", agent, "--wave", str(self.wave), "--print"])
        if done.code != 0:
            self._said(f"attach {agent}", done)
            return
        argv = shlex.split(done.text.strip().splitlines()[-1])  # after any warning, the argv
        with self.suspend():  # the terminal is tmux's until the person detaches
            ended = self.fleet.attach(argv)
        if ended.code != 0:
            gone = any(w in ended.text for w in NO_SESSION)
            said = (
                f"no tmux session for {agent}: agent sessions end with their wave (launch "
                "with --keep-sessions to keep them); l shows its output"
            )
            self._said(f"attach {agent}", Done(ended.code, said) if gone else ended)
        self.refresh(layout=True)

    def action_stop(self) -> None:
        if agent := self._agent():
            question = f"Stop {agent}? It counts as cancelled; the wave goes on."
            self._confirmed(question, f"stop {agent}", ["stop", "--agent", agent])

    def action_rerun(self) -> None:
        """In a running wave, the agent now; else its wave again, after the confirmation
        names what `wave rerun --dry-run` says it reruns and reuses, and why."""
        if (agent := self._agent()) and self.wave is not None:
            argv = ["rerun", agent, "--wave", str(self.wave), f"--reason={RERUN_REASON}"]
            question = f"Rerun {agent} of wave {self.wave}?"
            if self.alive:
                self._confirmed(question, f"rerun {agent}", argv)
            else:
                self._rerun_plan(agent, question, argv, self.fleet)

    def action_carry_on(self) -> None:
        """The agent goes on in its conversation, told what the person types (`wave rerun
        --continue`): now in a running wave, else its wave again in the background."""
        if (agent := self._agent()) and self.wave is not None:
            wave, alive = str(self.wave), self.alive
            self._ask(
                f"Tell {agent} (it goes on in its conversation with its CLI):",
                "",
                lambda text: [
                    *("rerun", agent, "--wave", wave, f"--continue={text}"),
                    *(() if alive else ("--detach", "--yes")),
                ],
                f"continue {agent}",
            )

    @work(thread=True, group="commands")
    def _rerun_plan(self, agent: str, question: str, argv: list[str], fleet: Fleet) -> None:
        """The plan off the event loop (it reads git), then the confirmation that names it:
        `y` runs that plan in the background without asking again, on the lane it is for."""
        plan = fleet.command([*argv[:4], "--dry-run"])
        if plan.code != 0:
            self.call_from_thread(self._said, f"rerun {agent}", plan)
            return
        words = strip_controls(plan.text.strip().splitlines()[-1] if plan.text.strip() else "")
        asked = f"{question} {words}" if words else question
        argv = [*argv, "--detach", "--yes"]
        self.call_from_thread(self._confirm_plan, asked, f"rerun {agent}", argv, fleet)

    def _confirm_plan(self, question: str, what: str, argv: list[str], fleet: Fleet) -> None:
        """A plan made for a lane the person has since left is not asked about."""
        if fleet is not self.fleet:
            self.notify("the lane changed: rerun not started", title=what, markup=False)
            return
        self._confirmed(question, what, argv)

    def action_answer(self) -> None:
        agent = self._agent()
        if agent is None:
            return
        coordination = (self.data or {}).get("coordination")
        questions = dicts(coordination.get("questions") if isinstance(coordination, dict) else None)
        asked = [
            q
            for q in questions
            if q.get("agent") == agent and REQUEST_ID_RE.fullmatch(str(q.get("id")))
        ]
        if not asked:
            self.notify(f"{agent} has no open question", title="answer", markup=False)
            return
        question = asked[0]
        rid = str(question["id"])
        self._ask(
            f"Answer {agent}'s question {strip_controls(rid)}:",
            strip_controls(str(question.get("question", ""))),
            lambda text: ["feedback", "respond", rid, f"--response={text}"],
            f"answer {agent}",
        )

    def action_comment(self) -> None:
        if (agent := self._agent()) and self.wave is not None:
            wave = str(self.wave)
            self._ask(
                f"Comment for {agent} (its inbox now, its later prompts):",
                "",
                lambda text: ["comment", "--agent", agent, "--wave", wave, f"--text={text}"],
                f"comment to {agent}",
            )

    def _agent(self) -> str | None:
        agent = self.selected()
        if agent is None or not AGENT_ID_RE.fullmatch(agent):
            self.notify("no agent selected", severity="warning", markup=False)
            return None
        return agent

    def _confirmed(self, question: str, what: str, argv: list[str]) -> None:
        def answered(yes: bool | None) -> None:
            if yes:
                self.notify(f"{what}…", title=what, timeout=2, markup=False)
                self._run(what, argv)

        self.push_screen(Confirm(question), answered)

    def _ask(self, title: str, prompt: str, argv: Callable[[str], list[str]], what: str) -> None:
        def answered(text: str | None) -> None:
            if text:
                self._run(what, argv(text))

        self.push_screen(Ask(title, prompt), answered)

    @work(thread=True, group="commands")
    def _run(self, what: str, argv: list[str]) -> None:
        """A command off the event loop: stopping an agent may take its kill grace."""
        done = self.fleet.command(argv)
        self.call_from_thread(self._said, what, done)

    def _said(self, what: str, done: Done) -> None:
        text = strip_controls(done.text.strip(), newlines=True)[-600:] or f"exit {done.code}"
        # a command's words quote agents: shown, never parsed
        if done.code:
            self.notify(text, title=what, severity="error", timeout=8, markup=False)
        else:
            self.notify(text, title=what, timeout=4, markup=False)
        self._seen = None  # redraw now: the command changed what the files say
