"""``ssh`` of a lane (the hosts a ``placement: ssh`` runs agents on, and how ``ssh`` reaches
them), and what that placement rules out elsewhere in the lane: a shared checkout the hosts do
not see, a bubblewrap sandbox (it confines agents on this machine only).

Every host value ends up in ``ssh`` argv or in a command run by the host's shell, so each is
held to a narrow alphabet here: a destination never reads as an option, a workdir needs no
quoting to mean what it says."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..model import IsolationSettings, PlacementSettings, SshHostDef, SshSettings
from ..source.schema import Checker
from ..source.yaml_source import FieldPath

SSH_KEYS = ("hosts", "config", "host_timeout_minutes")
HOST_KEYS = ("name", "destination", "workdir", "max_agents", "shared_path")
HOST_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}")
# What `ssh` takes as its host argument: an alias, host, user@host, [v6]:port. Never an option
# (a leading "-"), never a space or control character that could split it.
DESTINATION_RE = re.compile(r"[A-Za-z0-9_.@:\[\]%+][A-Za-z0-9_.@:\[\]%+-]{0,254}")
WORKDIR_RE = re.compile(r"[A-Za-z0-9_./~+-]+")
WORKDIR_EXPECTED = "an absolute path or ~/path of letters, digits and _ . / ~ + -"
HOSTILE = ("Cc", "Cf", "Zl", "Zp")  # control, format, line and paragraph separators


def check_lane_ssh(ck: Checker, value: Any, repo: Path) -> SshSettings | None:
    """A lane's ``ssh:``; None when the lane has none. Hosts with problems are left out,
    their problems recorded."""
    if value is None:
        return None
    raw = ck.mapping(value, ("ssh",), SSH_KEYS)
    if raw is None:
        return None
    out = SshSettings(hosts=_hosts(ck, raw.get("hosts")))
    if raw.get("config") is not None:
        out = out._replace(config=_config(ck, raw["config"], repo))
    if "host_timeout_minutes" in raw:
        path = ("ssh", "host_timeout_minutes")
        minutes = ck.number(raw["host_timeout_minutes"], path, positive=True)
        out = out._replace(host_timeout_minutes=float(minutes or out.host_timeout_minutes))
    return out


def _hosts(ck: Checker, value: Any) -> tuple[SshHostDef, ...]:
    """``ssh.hosts``; an empty or missing list is reported by ``check_ssh_placement``, which
    knows whether the lane runs on hosts at all."""
    path: FieldPath = ("ssh", "hosts")
    if value is None:
        return ()
    if not isinstance(value, list):
        ck.wrong_type(path, value, "a list of hosts {name, destination, ...}")
        return ()
    hosts: list[SshHostDef] = []
    seen: dict[str, int] = {}  # a casefolded name -> the host that has it
    for i, item in enumerate(value):
        host = _host(ck, item, (*path, i))
        name = item.get("name") if isinstance(item, dict) else None
        if isinstance(name, str) and HOST_NAME_RE.fullmatch(name):
            # a host's name names its files too, on a file system that may ignore case
            first = seen.setdefault(name.casefold(), i)
            if first != i:
                ck.error((*path, i, "name"), f"host name {name!r} is also hosts[{first}]'s")
                continue
        if host is not None:
            hosts.append(host)
    return tuple(hosts)


def _host(ck: Checker, item: Any, path: FieldPath) -> SshHostDef | None:
    raw = ck.mapping(item, path, HOST_KEYS)
    if raw is None:
        return None
    ok = True
    for key in ("name", "destination"):
        if key not in raw:
            ck.error(path, f"missing {key}", "a host {name, destination, ...}")
            ok = False
    name = destination = None
    if "name" in raw:
        name = ck.string(raw["name"], (*path, "name"), pattern=HOST_NAME_RE, noun="host name")
    if "destination" in raw:
        destination = _destination(ck, raw["destination"], (*path, "destination"))
    host = SshHostDef(name=name or "", destination=destination or "")
    if raw.get("workdir") is not None:
        workdir = _workdir(ck, raw["workdir"], (*path, "workdir"))
        ok = ok and workdir is not None
        host = host._replace(workdir=workdir)
    if "max_agents" in raw:
        most = ck.number(raw["max_agents"], (*path, "max_agents"), integer=True, minimum=1)
        ok = ok and most is not None
        host = host._replace(max_agents=int(most or host.max_agents))
    if "shared_path" in raw:
        shared = ck.boolean(raw["shared_path"], (*path, "shared_path"))
        ok = ok and shared is not None
        host = host._replace(shared_path=bool(shared))
    return host if ok and name and destination else None


def _destination(ck: Checker, value: Any, path: FieldPath) -> str | None:
    text = ck.string(value, path, what="an ssh destination (alias, host or user@host)")
    if text is None:
        return None
    if DESTINATION_RE.fullmatch(text):
        return text
    if not text:
        why = "it is empty"
    elif text.startswith("-"):
        why = "it starts with '-' and ssh would read it as an option"
    elif any(c.isspace() or unicodedata.category(c) in HOSTILE for c in text):
        why = "it holds a space or control character"
    elif len(text) > 255:
        why = "it is longer than 255 characters"
    else:
        bad = sorted({c for c in text if not DESTINATION_RE.fullmatch(f"a{c}")})
        why = "it holds " + " ".join(repr(c) for c in bad)
    ck.error(path, f"invalid destination {text!r}: {why}", "an ssh alias, host or user@host")
    return None


def _workdir(ck: Checker, value: Any, path: FieldPath) -> str | None:
    """A folder on the host, written into the host's shell commands as it is: so only
    characters no shell treats specially, absolute or under the remote HOME, never ``..``."""
    text = ck.string(value, path, what=WORKDIR_EXPECTED)
    if text is None:
        return None
    why = None
    if text.startswith("~") and not text.startswith("~/"):
        why = "of ~ forms only ~/ (below the host's HOME) is taken"
    elif not (text.startswith("/") or text.startswith("~/")):
        why = "it is relative (the host's shell would resolve it against wherever it starts)"
    elif not WORKDIR_RE.fullmatch(text):
        bad = sorted({c for c in text if not WORKDIR_RE.fullmatch(c)})
        shown = " ".join(repr(c) for c in bad)
        why = f"it holds {shown}, which a remote shell command would have to quote"
    elif ".." in text.split("/"):
        why = "it has a '..' component"
    if why is not None:
        ck.error(path, f"invalid workdir {text!r}: {why}", WORKDIR_EXPECTED)
        return None
    return text


def _config(ck: Checker, value: Any, repo: Path) -> Path | None:
    """``ssh.config``, resolved now (``~`` against the person's HOME, a relative path
    against the repository); it need not exist yet: a CI may write it before the launch."""
    path: FieldPath = ("ssh", "config")
    text = ck.string(value, path, what="a path to an ssh config file")
    if text is None:
        return None
    if not text.strip() or any(unicodedata.category(c) in HOSTILE for c in text):
        ck.error(path, f"invalid path {text!r}", "a path to an ssh config file")
        return None
    if text.startswith("~") and not (text == "~" or text.startswith("~/")):
        ck.error(path, f"{text!r}: only ~ and ~/ are expanded", "a path, ~/path or /path")
        return None
    given = Path.home() / text[2:] if text.startswith("~") else Path(text)  # the person's HOME
    return given if given.is_absolute() else repo / given


def check_ssh_placement(
    ck: Checker,
    raw: Mapping[str, Any],
    placement: PlacementSettings,
    isolation: IsolationSettings,
) -> None:
    """lane.yaml's ``ssh:`` against its ``placement``, ``isolation`` and ``defaults.sandbox``
    (``placement.ssh`` already set from ``ssh:`` when the placement is ssh)."""
    if not placement.remote:
        if raw.get("ssh") is not None:
            ck.error(("ssh",), "ssh: is read only with placement: ssh", "placement: ssh", key=True)
        return
    if placement.ssh is None or not placement.ssh.hosts:
        if not _hosts_written(raw.get("ssh")):
            ck.error(("placement",), "ssh placement needs ssh.hosts", "an ssh: {hosts: [...]}")
        return  # hosts written but none valid: each host's problem is reported
    check_ssh_isolation(ck, isolation, placement, ())
    defaults = raw.get("defaults")
    if isinstance(defaults, Mapping):
        check_ssh_sandbox(ck, defaults.get("sandbox"), placement, ("defaults",))


def _hosts_written(value: Any) -> bool:
    """Whether ``ssh.hosts`` holds something (whose problems, if any, are reported there)."""
    return isinstance(value, Mapping) and value.get("hosts") not in (None, [])


def check_ssh_isolation(
    ck: Checker, isolation: IsolationSettings, placement: PlacementSettings, where: FieldPath
) -> None:
    """Agents on hosts work in git worktrees there, made from what wave pushes: a shared
    checkout exists only on a host that sees this machine's (``shared_path``)."""
    hosts = placement.ssh.hosts if placement.remote and placement.ssh else ()
    if isolation.worktree or all(h.shared_path for h in hosts):  # no hosts: reported already
        return
    apart = [h.name for h in hosts if not h.shared_path]
    ck.error(
        (*where, "isolation"),
        f"agents on ssh hosts work in git worktrees there, and isolation {isolation.mode} "
        f"would need this checkout on each host ({', '.join(apart)} "
        f"{'says' if len(apart) == 1 else 'say'} no shared_path)",
        "isolation: worktree, or shared_path: true on hosts that see this checkout at its path",
    )


def check_ssh_sandbox(
    ck: Checker, value: Any, placement: PlacementSettings, where: FieldPath
) -> None:
    """A ``sandbox`` (of lane defaults, a wave or an agent) that names ``bubblewrap`` on an ssh
    lane: bubblewrap confines agents on this machine only (``auto`` runs them unsandboxed)."""
    if not placement.remote:
        return
    path: FieldPath = (*where, "sandbox")
    if isinstance(value, Mapping):
        value, path = value.get("mode"), (*path, "mode")
    if value == "bubblewrap":
        ck.error(
            path,
            "bubblewrap confines agents on this machine only, and this lane runs them on ssh hosts",
            "sandbox: auto (agents on hosts run unsandboxed, and wave says so) or none",
        )
