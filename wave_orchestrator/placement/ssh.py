"""The SSH placement: each agent's try in a tmux session on one of the lane's hosts.

An agent goes to the answering host with the most free slots (``max_agents``), the first in
``ssh.hosts`` on a tie. Its worktree there is made from the host's bare mirror, which its
commit reaches by ``git push`` over the host's shared connection (the host needs no network
of its own); its files follow, relocated (``ssh_ship``), and its ``run.sh`` starts in a
session on the lane's tmux server there. Each host is looked at every half second
(``ssh_host``): output and status come back into the agent's folder here, so everything after
(budgets, gates, the console) is what it is for a local agent. When the agent has ended,
``bring_back`` commits what it left uncommitted there and fetches its branch here.

Handles are ``host index << 32 | pane pid``: two hosts may give the same pid.
"""

from __future__ import annotations

import contextlib
import secrets
import shlex
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

from ..definitions.model import SshSettings
from ..errors import PlacementError, WaveError
from ..state.layout import AGENT_SESSION_RE, StateLayout, repo_tag, socket_name
from . import ssh_remote
from .base import AgentJob, PaneInfo, start_each
from .ssh_client import (
    SshClient,
    SshError,
    SshHost,
    control_prefix,
    end_stale_connections,
    said,
)
from .ssh_host import Followed, Host
from .ssh_record import HostRecord, followed_again, followed_on, log_size, write_record
from .ssh_remote import KILL, PREPARE, PRUNE, SETTLE, SIGNAL, START, Pane, prepared, script
from .ssh_requests import Requests
from .ssh_ship import GitSide, Relocation, pack

HOST_LOST = "host-lost"  # how an agent on a lost host ended


STARTS_AT_ONCE = 8  # a burst's starts in flight together
START_SECONDS = 300  # a start makes a worktree on its host: a large repository takes a while
WORK_LEFT = "wave: work {agent} left uncommitted on host {host}"


class SshPlacement:
    kind = "ssh"
    queues = False
    unreachable_since: float | None = None  # each host is waited for on its own

    def __init__(
        self,
        settings: SshSettings,
        layout: StateLayout,
        repo: Path,
        git: GitSide | None,
        warn: Callable[[str], None],
        programs: Sequence[str] = (),
        command: bool = False,
    ) -> None:
        """``command``: for a person's command (stop, attach, status), which looks at its
        hosts when it asks rather than following them. Each has connections of its own, so
        that ending them never ends a running launcher's."""
        self.settings, self.layout, self.repo, self.git = settings, layout, repo, git
        self.warn, self.programs = warn, tuple(programs)
        self.tag = repo_tag(repo)
        # A launch's shared connections: their sockets in a folder of its own, made owner-only
        # under a name nobody can guess. A person's command connects on its own each time.
        self.control_prefix = control_prefix(self.tag, layout.lane)
        control = None if command else Path("/tmp") / f"{self.control_prefix}{secrets.token_hex(5)}"
        timeout = settings.host_timeout_minutes * 60
        self.hosts = [
            Host(
                i,
                spec,
                SshClient(SshHost(spec.name, spec.destination, settings.config), control),
                timeout,
                socket_name(layout.lane, repo),
            )
            for i, spec in enumerate(settings.hosts, start=1)
        ]
        self.following = False  # a launch follows its hosts; a command looks when it asks
        self.resuming = False  # `--resume`: a dead launcher's sessions are followed again
        self.removed: set[str] = set()  # sessions taken away: never followed again
        self._choosing = threading.Lock()
        self.requests = Requests(layout, repo)  # its agents' `wave coord`, `wave feedback`
        for host in self.hosts:
            host.on_request = partial(self.requests.take, host.client)
        self.where: dict[str, Host] = {}  # session -> its host
        self.placed: dict[str, Followed] = {}  # session -> where its last try worked
        self.local_roots = (repo, layout.root, layout.worktrees)

    # -- before any agent ------------------------------------------------------------------
    def check(self) -> None:
        """Each host prepared (its root and mirror) and checked for what agents need; every
        problem of every host in one error."""
        problems = []
        for host in self.hosts:
            try:
                self.prepare(host)
            except SshError as exc:
                problems.append(str(exc))
        if problems:
            raise PlacementError("; ".join(problems))
        # A launcher of this lane that died left its connections: ended (the lane's lock is
        # held, so no other launcher of it runs).
        if (mine := self.hosts[0].client.control_dir) is not None:
            end_stale_connections(Path("/tmp"), self.control_prefix, mine)
        for host in self.hosts:  # what runs there already (a dead launcher's) is known first
            host.look(self.warn)
            host.start_following(self.warn)
        self.following = True

    def prepare(self, host: Host, needs: Sequence[str] | None = None) -> None:
        """The host's root made and checked: reachable, the programs, room on its disk."""
        if needs is None:
            needs = ("tmux", "git", "bash", "tar", "base64", *self.programs)
        answer = host.client.run(script(PREPARE, host.spec.workdir or "", self.tag, *needs))
        if answer.code != 0:
            raise SshError(f"host {host.name} ({host.spec.destination}): {said(answer)}")
        root, free, missing = prepared(answer.out)
        if root is None:
            raise SshError(f"host {host.name}: its workdir is no usable path")
        lacking = [p for p in needs if p in missing]  # only names wave asked about are shown
        if lacking:
            raise SshError(f"host {host.name} lacks {', '.join(lacking)} on its PATH")
        if free is not None and free < 100 * 1024:
            raise SshError(f"host {host.name}: its disk is full ({free // 1024} MiB free)")
        host.root, host.can_scan = root, "noscan" not in answer.out.split("\n")
        if not host.can_scan:
            self.warn(f"host {host.name}: {ssh_remote.NO_SCAN}")

    # -- starting --------------------------------------------------------------------------
    def room(self) -> int | None:
        return sum(host.room() for host in self.hosts)

    def _choose(self, session: str) -> Host:
        """The answering host with the most free slots, one of them taken for ``session`` at
        once (a burst's starts run side by side)."""
        with self._choosing:
            best = max(self.hosts, key=lambda h: (h.room(), -h.index))
            if best.room() <= 0 or best.root is None:
                raise PlacementError("no SSH host has a free slot")
            best.reserve(session)
            return best

    def start(self, job: AgentJob) -> int | None:
        host = self._choose(job.session)
        try:
            return self._start(job, host)
        except BaseException as exc:
            host.release(job.session)
            self.placed.pop(job.session, None)
            if host.answering and host.root is not None:  # it may have started all the same
                with contextlib.suppress(Exception):
                    host.client.run(script(KILL, host.root, job.session), timeout=30)
            if isinstance(exc, WaveError) and not isinstance(exc, PlacementError):
                # its worktree's git: a failed start, not a failed launcher
                raise PlacementError(f"could not start {job.session}: {exc}") from exc
            raise

    def _start(self, job: AgentJob, host: Host) -> int | None:
        assert host.root is not None
        cwd = Path(job.cwd)
        head = self.git.head(cwd) if self.git is not None else None
        shared = host.spec.shared_path
        if head is None and not shared:
            raise PlacementError(f"host {host.name}: an agent there needs a worktree")
        where = Relocation(self.local_roots, host.root)
        env = {"GIT_SSH_COMMAND": host.client.git_ssh_command()}
        branch, sha = ("", "") if shared or head is None else head
        if branch:
            assert self.git is not None
            mirror = host.client.git_url(f"{host.root}/mirror.git")
            self.git.push(cwd, mirror, f"{sha}:refs/wave/{branch}", env)
        run_sh = Path(job.argv[-1])
        followed = followed_on(host.root, shared, self.local_roots, job.agent_dir, job.cwd, branch)
        host_dir, remote_cwd = followed.host_dir, followed.cwd
        log_base = log_size(job.agent_dir)
        write_record(
            job.agent_dir, HostRecord(host.name, job.cwd if branch else "", branch, log_base)
        )
        host.follow(job.session, followed)
        self.removed.discard(job.session)
        self.where[job.session] = host
        self.placed[job.session] = followed
        payload = b"" if shared else pack(job.agent_dir, [self.layout.accounts], where)
        words = (host.root, job.session, remote_cwd)
        script_path = str(run_sh) if shared else where.path(run_sh)
        ship = "" if shared else "1"
        answer = host.client.run(
            script(START, *words, script_path, host_dir, branch, sha, ship),
            payload,
            timeout=START_SECONDS,
        )
        pid = answer.out.strip().splitlines()[-1] if answer.out.strip() else ""
        if answer.code != 0 or not (pid.isascii() and pid.isdigit() and int(pid) < 1 << 31):
            raise PlacementError(f"host {host.name}: could not start {job.session}: {said(answer)}")
        host.started_now(job.session, int(pid))
        return host.index << 32 | int(pid)

    def start_many(self, jobs: Sequence[AgentJob]) -> list[int | Exception | None]:
        """A burst's agents started side by side (each a push and one command on its host,
        most of it waiting on the network), in order: each one's handle or its error."""
        if len(jobs) < 2:
            return start_each(self, jobs)
        with ThreadPoolExecutor(min(len(jobs), STARTS_AT_ONCE), "wave-ssh-start") as pool:
            return list(pool.map(self._start_one, jobs))

    def _start_one(self, job: AgentJob) -> int | Exception | None:
        """One start of a burst: its handle, or whatever kept it from starting (one bad job
        never loses the burst's other handles)."""
        try:
            return self.start(job)
        except Exception as exc:
            return exc if isinstance(exc, (PlacementError, OSError)) else PlacementError(str(exc))

    # -- following -------------------------------------------------------------------------
    def _look_now(self, hosts: Sequence[Host]) -> None:
        """For a command (stop, attach, status): each host looked at once, now. A host that
        cannot be reached is said so and left out."""
        for host in hosts:
            try:
                if host.root is None:
                    self.prepare(host, needs=())
                host.look(self.warn)
            except SshError as exc:
                self.warn(str(exc))

    def sessions(self, strict: bool = False) -> dict[str, PaneInfo]:
        """Every agent pane of every host, as its last look saw it; a lost host's agents dead
        and ``host-lost``; a silent one's as they were."""
        if not self.following:
            self._look_now(self.hosts)
        out: dict[str, PaneInfo] = {}
        for host in self.hosts:
            panes = host.panes_seen()
            with host.lock:
                followed = set(host.followed)
            if host.lost:
                for name in followed:
                    out[name] = PaneInfo(name, True, None, None, ended=HOST_LOST, host=host.name)
                continue
            for name, pane in panes.items():
                if not AGENT_SESSION_RE.fullmatch(name):
                    continue
                placed = self.where.get(name)
                if placed is not None and placed is not host:
                    continue  # an earlier try's pane, on the host it left: not this try's
                if self.resuming and name not in followed and name not in self.removed:
                    self._adopt(host, name, pane.pid)  # (sets where[name] when it is ours)
                if name in out and self.where.get(name) is not host:
                    continue  # the same name on two hosts: the one it was placed on
                handle = host.index << 32 | pane.pid if pane.pid is not None else None
                out[name] = PaneInfo(name, pane.dead, pane.status, handle, host=host.name)
                if not self.following:  # a command: the first host that has it
                    self.where.setdefault(name, host)
        return out

    def _adopt(self, host: Host, session: str, pid: int | None) -> None:
        """A session a dead launcher started on ``host`` (``--resume``): followed again, from
        its record here, when the record is one wave wrote for that host."""
        wave, _, agent = session[1:].partition("-")
        agent_dir = self.layout.agent(int(wave), agent).dir
        found = followed_again(agent_dir, host, self.layout.worktrees, self.local_roots, self.repo)
        if found is None:
            return
        followed, offset = found
        host.follow(session, followed, offset=offset)
        if pid is not None:
            host.started_now(session, pid)
        self.where[session], self.placed[session] = host, followed

    def _having(self, session: str) -> list[Host]:
        """The hosts whose last look showed ``session``."""
        return [host for host in self.hosts if session in host.panes_seen()]

    def _host_of(self, handle: int) -> Host | None:
        index = handle >> 32
        return self.hosts[index - 1] if 1 <= index <= len(self.hosts) else None

    def signal(self, handle: int, signum: int) -> bool:
        host = self._host_of(handle)
        if host is None or not host.answering or host.root is None:
            return False  # a silent host is not waited on: its agents are kept as they are
        pid = handle & 0xFFFFFFFF
        session = host.session_of(pid)
        token = host.token(session) if session is not None else ""
        return host.client.run(script(SIGNAL, str(signum), str(pid), token), timeout=30).code == 0

    def alive(self, handle: int) -> bool:
        """Its pane runs, or its agent left processes running there, its pane gone or not
        (the one kill escalation, ``Reaper``, ends them as a local agent's)."""
        host, session, pane = self._pane(handle)
        if host is None or session is None:
            return False
        return (pane is not None and not pane.dead) or host.left_running(session)

    def wrapper_running(self, handle: int) -> bool:
        pane = self._pane(handle)[2]
        return pane is not None and not pane.dead

    def _pane(self, handle: int) -> tuple[Host | None, str | None, Pane | None]:
        """The handle's host, session and pane (as its host's last look saw them)."""
        host = self._host_of(handle)
        if host is None or host.lost:
            return None, None, None
        if not self.following:  # a command waiting for an agent to end: look again
            self._look_now([host])
        pid = handle & 0xFFFFFFFF
        session = host.session_of(pid)
        return host, session, None if session is None else host.pane(session, pid)

    def remove(self, names: Iterable[str]) -> None:
        by_host: dict[int, list[str]] = {}
        for name in names:
            self.removed.add(name)
            hosts = [self.where[name]] if name in self.where else self._having(name)
            for host in hosts:  # one wave placed, or wherever an earlier launch left it
                by_host.setdefault(host.index, []).append(name)
        for index, sessions in by_host.items():
            host = self.hosts[index - 1]
            for name in sessions:
                host.release(name)
            if not host.answering:
                with host.lock:
                    host.doomed.update(sessions)
                continue
            assert host.root is not None
            host.client.run(script(KILL, host.root, *sessions), timeout=30)

    def attach_argv(self, session: str, output_log: Path) -> list[str]:
        if session not in self.where:
            self.sessions()
        host = self.where.get(session) or self.hosts[0]
        root = host.root or "."
        return host.client.argv(
            ["tmux", "-S", f"{root}/tmux", "attach", "-t", f"={session}"], tty=True
        )

    def command_line(self, job: AgentJob) -> list[str]:
        host = self.hosts[0]
        return host.client.argv(
            ["tmux", "new-session", "-d", "-s", job.session, shlex.join(job.argv)]
        )

    # -- after an agent ----------------------------------------------------------------------
    def bring_back(self, session: str, agent: str) -> None:
        """What the agent did on its host, here: its leftovers committed there and its branch
        fetched into its worktree here. Raises PlacementError when its host cannot be asked."""
        host = self.where.get(session)
        if host is None or self.git is None:
            return
        followed = self.placed.get(session)
        if followed is None or not followed.branch or not followed.mirrored:
            return
        if host.lost:
            raise PlacementError(f"host {host.name} is lost: {session}'s work stays there")
        message = WORK_LEFT.format(agent=agent, host=host.name)
        answer = host.client.run(
            script(SETTLE, followed.cwd, followed.branch, message), timeout=120
        )
        if answer.code != 0 or not answer.out.strip():
            if answer.code == 0:
                return  # it never had a worktree there: nothing to bring
            raise PlacementError(
                f"host {host.name}: {session}'s work not brought back: {said(answer)}"
            )
        assert host.root is not None
        env = {"GIT_SSH_COMMAND": host.client.git_ssh_command()}
        url = host.client.git_url(f"{host.root}/mirror.git")
        self.git.take(Path(followed.local_cwd), url, f"refs/heads/{followed.branch}", env)

    def close(self) -> None:
        """Followers stopped, worktrees whose work is here removed from their hosts, shared
        connections ended: nothing of wave left running here."""
        self.requests.close()
        for host in self.hosts:
            host.stop_following()
            done = [
                f.cwd
                for session, f in self.placed.items()
                if self.where.get(session) is host and f.branch and not Path(f.local_cwd).exists()
            ]
            if done and host.answering and host.root is not None:
                with contextlib.suppress(OSError, SshError):
                    host.client.run(script(PRUNE, host.root, *done), timeout=60)
            with contextlib.suppress(OSError, SshError):
                host.client.close()
        # Any master still there (one that started as the last command ran) ended as well.
        folder = self.hosts[0].client.control_dir
        if folder is not None:
            end_stale_connections(folder.parent, folder.name, keep=folder.parent)
