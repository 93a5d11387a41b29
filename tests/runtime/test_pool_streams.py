"""The agents' live structured state in the pool: a fake claude that streams tool calls (its
events appended to its output.log in simulated time) shows in dashboard.json as what it does,
its turns, tool calls and cost while it runs; a chatty stream does not make the loop rewrite
the dashboard more than about once a second; the stream's ``result`` does not end an agent."""

from __future__ import annotations

import io
import itertools
import json
from collections.abc import Iterator
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from fakes.clock import FakeClock, clock_installed
from fakes.placement import Script
from fakes.pool import make_pool

import wave_orchestrator.runtime.wave.snapshot as snapshot_module
from wave_orchestrator.cli.status import _print_stream
from wave_orchestrator.dashboard.agent_rows import agent_cells
from wave_orchestrator.dashboard.render import last_output
from wave_orchestrator.definitions.loading.lane_loader import load_lane
from wave_orchestrator.runtime.agent.plan import Planner
from wave_orchestrator.runtime.agent.run import AgentRun
from wave_orchestrator.runtime.pool.context import PoolHooks
from wave_orchestrator.runtime.wave.snapshot import SnapshotWriter
from wave_orchestrator.state.layout import StateLayout
from wave_orchestrator.state.lifecycle import AgentState
from wave_orchestrator.state.untrusted import read_snapshot

SESSION = "c3d4e5f6-a7b8-4c9d-8e0f-1a2b3c4d5e6f"
LANE = """\
closure: {required_roles: []}
defaults: {timeout_minutes: 5, max_retries_per_wave: 0, launch_stagger_ms: 0}
"""


def init() -> dict[str, Any]:
    return {"type": "system", "subtype": "init", "session_id": SESSION, "tools": ["Bash"]}


def assistant(ident: str, block: dict[str, Any], tokens: int = 10) -> dict[str, Any]:
    usage = {"input_tokens": tokens, "output_tokens": tokens}
    message = {"id": ident, "role": "assistant", "content": [block], "usage": usage}
    return {"type": "assistant", "message": message, "parent_tool_use_id": None}


def tool_use(ident: str, name: str) -> dict[str, Any]:
    return assistant(ident, {"type": "tool_use", "id": f"tu_{ident}", "name": name, "input": {}})


def tool_result() -> dict[str, Any]:
    content = [{"type": "tool_result", "tool_use_id": "x", "content": "ok"}]
    return {"type": "user", "message": {"role": "user", "content": content}}


def result(cost: float, turns: int) -> dict[str, Any]:
    usage = {"input_tokens": 1200, "output_tokens": 345}
    return {
        "type": "result",
        "subtype": "success",
        "num_turns": turns,
        "total_cost_usd": cost,
        "usage": usage,
        "session_id": SESSION,
    }


def plan_claude(root: Path, agents: str = "K") -> list[AgentRun]:
    """Agents of wave 1 on claude with ``--output-format stream-json``: their CLI streams."""
    folder = root / "lanes" / "sim"
    (folder / "waves").mkdir(parents=True, exist_ok=True)
    (folder / "lane.yaml").write_text(LANE)
    executor = "{id: claude, claude: {output_format: stream-json}}"
    rows = "".join(f"  - {{id: {a}, prompt: go, executor: {executor}}}\n" for a in agents)
    (folder / "waves" / "wave-1.yaml").write_text("agents:\n" + rows)
    lane = load_lane(root, "sim")
    wave, planner = lane.wave(1), Planner(lane, StateLayout(lane.state_dir, "sim"))
    return [AgentRun(planner.plan(wave, a)) for a in wave.agents]


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeClock]:
    """The fake clock for the pool, and for the dashboard's own rate limit too."""
    with clock_installed(FakeClock()) as fake:
        monkeypatch.setattr(snapshot_module, "time", fake)
        yield fake


class Dashboard:
    """The wave's real dashboard.json writer, as the wave runner hooks it to its pool, with
    the moments (simulated) it wrote a frame."""

    def __init__(self, runs: list[AgentRun], clock: FakeClock, monkeypatch: Any) -> None:
        self.path = runs[0].launch.paths.dir.parent.parent / "dashboard.json"
        self.writer = SnapshotWriter(self.path, {"lane": "sim", "wave": 1})
        self.runs, self.clock = runs, clock
        self.written: list[float] = []
        real = snapshot_module.write_json_atomic

        def counted(path: Path, data: Any) -> None:
            self.written.append(clock.mono)
            real(path, data)

        monkeypatch.setattr(snapshot_module, "write_json_atomic", counted)

    def on_change(self) -> bool:
        return self.writer.write(self.runs, [])

    def row(self, agent: str = "K") -> dict[str, Any]:
        """The agent's row as every reader gets it: forced out now, read back through the schema."""
        self.writer.write(self.runs, [], force=True)
        data = read_snapshot(self.path)
        assert data is not None
        return next(a for a in data["agents"] if a["id"] == agent)


def append(run: AgentRun, *events: dict[str, Any]) -> None:
    with run.launch.paths.output_log.open("a", encoding="utf-8") as fh:
        fh.writelines(json.dumps(e) + "\n" for e in events)


def test_a_streaming_agent_shows_its_tool_turns_and_cost_while_it_runs(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    [run] = runs = plan_claude(tmp_path)
    assert run.stream is not None  # its try's argv streams events
    board = Dashboard(runs, clock, monkeypatch)
    sim = make_pool(runs, clock, Script(runs_for=40))
    sim.pool.hooks = PoolHooks(on_change=board.on_change)
    seen: dict[str, dict[str, Any]] = {}

    def look(name: str) -> None:
        seen[name] = board.row()

    clock.after(2, lambda: append(run, init(), tool_use("m1", "Bash")))
    clock.after(4.5, lambda: look("tool"))
    text = {"type": "text", "text": "Running the suite.\nAll 3 tests pass."}
    clock.after(6, lambda: append(run, tool_result(), assistant("m2", text)))
    clock.after(7, lambda: append(run, result(0.0521925, 2)))
    clock.after(9.5, lambda: look("result"))
    assert sim.run() == 40

    tool = seen["tool"]
    assert tool["state"] == "running"
    stream = tool["stream"]
    assert (stream["activity"], stream["tool"]) == ("tool", "Bash")
    assert (stream["turns"], stream["tool_calls"]) == (1, 1)
    assert stream["conversation"] == SESSION
    assert stream["cost_usd"] is None  # claude says its cost in its result only
    assert last_output(tool) == "tool: Bash · 1 turn · 1 tool · 20 tok"
    cells = agent_cells(tool, {})
    assert cells[4].plain == "20" and cells[-1].plain == "tool: Bash · 1 turn · 1 tool"
    out = io.StringIO()
    with redirect_stdout(out):
        _print_stream(tool)
    assert " ".join(out.getvalue().split()) == "tool: Bash · 1 turn · 1 tool · 20 tok"

    done = seen["result"]  # its result event: the stream is idle, the agent still runs
    assert done["state"] == "running" and done["exit_code"] is None
    stream = done["stream"]
    assert (stream["activity"], stream["turns"], stream["tool_calls"]) == ("idle", 2, 1)
    assert stream["cost_usd"] == pytest.approx(0.0521925)
    assert (stream["input_tokens"], stream["output_tokens"]) == (1200, 345)
    assert stream["last_line"] == "All 3 tests pass."
    line = "idle · 2 turns · 1 tool · 1.5k tok · $0.05 · All 3 tests pass."
    assert last_output(done) == line
    assert agent_cells(done, {})[5].plain == "$0.05"

    assert run.state is AgentState.COMPLETED  # ended by its process's status, at 40 s
    ended = board.row()
    assert ended["stream"]["cost_usd"] == pytest.approx(0.0521925)  # kept once it ended
    assert last_output(ended) == ended["last_line"]  # an ended agent's activity is not shown
    out = io.StringIO()
    with redirect_stdout(out):
        _print_stream(ended)
    assert out.getvalue() == ""


def test_a_text_mode_agent_has_no_stream(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """claude's default text output prints no event: its row keeps today's last line."""
    [run] = plan_text_claude(tmp_path)
    assert run.stream is None
    board = Dashboard([run], clock, monkeypatch)
    run.launch.paths.dir.mkdir(parents=True, exist_ok=True)
    append(run, init(), tool_use("m1", "Bash"))  # JSON the agent printed is not a stream
    with run.launch.paths.output_log.open("a") as fh:
        fh.write("Running the suite.\n")
    run.to(AgentState.LAUNCHING)
    run.begin(clock.mono)
    run.launched_wall = clock.time()
    row = board.row()
    assert row["stream"] is None
    assert last_output(row) == row["last_line"] == "Running the suite."


def plan_text_claude(root: Path) -> list[AgentRun]:
    folder = root / "lanes" / "sim"
    (folder / "waves").mkdir(parents=True, exist_ok=True)
    (folder / "lane.yaml").write_text(LANE)
    (folder / "waves" / "wave-1.yaml").write_text(
        "agents:\n  - {id: K, prompt: go, executor: {id: claude}}\n"
    )
    lane = load_lane(root, "sim")
    wave, planner = lane.wave(1), Planner(lane, StateLayout(lane.state_dir, "sim"))
    return [AgentRun(planner.plan(wave, a)) for a in wave.agents]


def chatty(run: AgentRun, clock: FakeClock, every: float, until: float) -> None:
    """``run`` calls a tool every ``every`` simulated seconds until ``until``."""
    count = iter(range(10**9))

    def step() -> None:
        if clock.mono >= until:
            return
        n = next(count)
        append(run, tool_use(f"m{n}", "Bash" if n % 2 else "Read"), tool_result())
        clock.after(every, step)

    clock.after(every, step)


@pytest.mark.parametrize("streams", [False, True])
def test_a_chatty_stream_rewrites_the_dashboard_at_most_about_once_a_second(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, streams: bool
) -> None:
    """Five agents each call a tool every 50 ms for a minute: the dashboard is written once a
    second (the loop reads the streams once a poll, and their news is the refresh it was to
    write anyway), against a quiet fleet's once every two seconds."""
    runs = plan_claude(tmp_path, agents="ABCDE")
    board = Dashboard(runs, clock, monkeypatch)
    sim = make_pool(runs, clock, Script(runs_for=61))
    sim.pool.hooks = PoolHooks(on_change=board.on_change)
    if streams:
        for run in runs:
            chatty(run, clock, 0.05, clock.mono + 60)
    began = clock.mono
    sim.run()
    writes = [at - began for at in board.written if 1 <= at - began < 60]  # launch, ends aside
    gaps = [b - a for a, b in itertools.pairwise(writes)]
    print(f"streams={streams}: {len(writes)} frames in 59 s, shortest gap {min(gaps):.2f} s")
    assert len(writes) <= 62  # about once a second at most, however chatty
    assert min(gaps) >= 0.9  # a stream's news rides the refresh: no frame between two polls
    if streams:  # and the picture kept up: a frame in every second of the minute
        assert len({int(at) for at in writes}) >= 55
        assert all(r.stream and r.stream.state.tool_calls >= 1000 for r in runs)


def test_the_summary_reads_an_ended_agents_stream_to_its_end(tmp_path: Path) -> None:
    """What the loop had not read yet when the agent ended (here over a megabyte of it, more
    than one read) is read before its summary is written: its totals are the final ones."""
    from wave_orchestrator.agents.stream_state import READ_CHUNK
    from wave_orchestrator.closure.gates import AgentResult
    from wave_orchestrator.closure.markers import parse_markers
    from wave_orchestrator.runtime.pool.streams import stream_row
    from wave_orchestrator.runtime.wave.summaries import write_summary
    from wave_orchestrator.state.events import EventLog

    [run] = plan_claude(tmp_path)
    run.launch.paths.dir.mkdir(parents=True, exist_ok=True)
    run.to(AgentState.LAUNCHING)
    run.begin(0.0)
    run.launched_wall = 1_900_000_000.0
    big = {"type": "text", "text": "x" * 4000 + "\nworking"}
    edit = {"type": "tool_use", "name": "Edit", "input": {"new_string": "y" * 3000}}
    calls = [assistant(f"m{n}", {**edit, "id": f"tu{n}"}) for n in range(400)]
    append(run, init(), *calls, assistant("last", big), result(1.25, 401))
    assert run.launch.paths.output_log.stat().st_size > 4 * READ_CHUNK
    run.end(AgentState.COMPLETED, EventLog(tmp_path / "events.jsonl"), 0)
    assert stream_row(run) is None  # nothing read yet: the loop never looked

    def result_of(agent: Any) -> AgentResult:
        return AgentResult(agent, "success", 0, parse_markers(""), tmp_path)

    write_summary(run, result_of, {})
    stream = json.loads(run.launch.paths.summary.read_text())["stream"]
    assert (stream["turns"], stream["tool_calls"], stream["cost_usd"]) == (401, 400, 1.25)
    assert (stream["activity"], stream["last_line"]) == ("idle", "working")


def test_a_look_reads_a_megabyte_of_all_streams_at_most_and_each_gets_its_turn(
    tmp_path: Path,
) -> None:
    """Ten agents each pouring out megabytes: one look of the loop reads about a megabyte in
    all (four reads), the next starts from the next agent, so every stream moves."""
    from wave_orchestrator.agents.stream_state import READ_CHUNK
    from wave_orchestrator.runtime.pool.streams import BYTES_PER_LOOK, follow_streams

    runs = plan_claude(tmp_path, "ABCDEFGHIJ")
    words = {"type": "text", "text": "x" * 2000}
    for run in runs:
        run.launch.paths.dir.mkdir(parents=True, exist_ok=True)
        run.to(AgentState.LAUNCHING)
        run.begin(0.0)
        append(run, init(), *[assistant(f"m{n}", words) for n in range(1500)])  # ~3.5 MB
    offsets = lambda: [r.stream.offset for r in runs if r.stream]  # noqa: E731
    follow_streams(runs)
    read = sum(offsets())
    assert BYTES_PER_LOOK <= read <= BYTES_PER_LOOK + READ_CHUNK
    assert sum(1 for o in offsets() if o) == BYTES_PER_LOOK // READ_CHUNK
    for _ in range(2):
        follow_streams(runs)
    assert all(offsets())  # three looks: every agent's stream was read
