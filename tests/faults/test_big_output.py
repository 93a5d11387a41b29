"""Fault class 9: big output. Finishing an agent that printed 100 MB must not cost the launcher
that much memory nor hold its main loop: markers come from a bounded tail of the last try, usage
from a line-by-line parser, on a worker thread when the log is big (issue 10)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import Repo, local_lane, parse_at

from wave_orchestrator.agents.usage import read_usage_file
from wave_orchestrator.closure.report_verdict import report_verdict
from wave_orchestrator.state.layout import StateLayout
from wave_orchestrator.state.status import MARKER_TAIL_BYTES, last_try_output

pytestmark = pytest.mark.e2e

RSS_LIMIT_KB = 60 * 1024  # the launcher's memory target, whatever its agents print
EVENT = json.dumps(
    {"type": "assistant", "message": {"content": [{"type": "text", "text": "x" * 40}]}}
)
RESULT = json.dumps(
    {
        "type": "result",
        "result": "done\n[wave-phase] finished",
        "total_cost_usd": 0.5,
        "usage": {"input_tokens": 11, "output_tokens": 7},
    }
)
# A fake claude that prints ~150 MB of short stream-json events (many lines), then its result.
BIG_CLAUDE = f"cat > /dev/null; yes '{EVENT}' | head -n 1250000; echo '{RESULT}'\n"
# Measures the peak memory of the command it runs (its own children count: the launcher).
PEAK_RSS = (
    "import resource, subprocess, sys\n"
    "code = subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL).returncode\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    "sys.exit(code)\n"
)


def big_lane(repo: Repo, extra: str = "") -> None:
    repo.fake("claude", BIG_CLAUDE)
    repo.lane(
        "main",
        local_lane(),
        {
            1: "agents:\n"
            "  - {id: BIG, prompt: p, executor: {id: claude, claude: {output_format: stream-json}}}\n"
            + extra
        },
    )


def metrics(repo: Repo) -> dict[str, dict]:
    lines = (repo.state("main") / "metrics.jsonl").read_text().splitlines()
    return {r["agent"]: r for r in map(json.loads, lines)}


def test_finishing_a_100_mb_agent_keeps_the_launcher_small(tmux_repo: Repo) -> None:
    big_lane(tmux_repo)
    command = [sys.executable, "-c", PEAK_RSS, *tmux_repo.command("launch", "--lane", "main")]
    result = subprocess.run(
        command, env=tmux_repo.env, cwd=tmux_repo.root, capture_output=True, text=True, timeout=180
    )
    assert result.returncode == 0, result.stderr
    log = tmux_repo.agent_dir("main", 1, "BIG") / "output.log"
    assert log.stat().st_size > 140_000_000
    peak_kb = int(result.stdout.strip().splitlines()[-1])
    print(f"launcher peak RSS {peak_kb // 1024} MB")
    assert peak_kb < RSS_LIMIT_KB, f"launcher peaked at {peak_kb // 1024} MB"
    # The usage at the end of the 100 MB was still found.
    record = metrics(tmux_repo)["BIG"]
    assert (record["input_tokens"], record["output_tokens"], record["cost_usd"]) == (11, 7, 0.5)


def test_another_agent_finish_is_handled_while_a_big_log_is_read(tmux_repo: Repo) -> None:
    # FAST ends just after BIG: its finish is noticed while BIG's 100 MB are being read.
    status = '"$WAVE_REPO/.wave/main/waves/wave-1/agents/BIG/status.json"'
    fast = (
        f"while [ ! -e {status} ]; do sleep 0.05; done; sleep 0.2; "
        'date +%s.%N > "$WAVE_REPO/fast-exit"'
    )
    big_lane(
        tmux_repo,
        f"  - {{id: FAST, prompt: p, executor: {{local: {{command: {json.dumps(fast)}}}}}}}\n",
    )
    assert tmux_repo.wave("launch", "--lane", "main", timeout=180).returncode == 0
    exited = float((tmux_repo.root / "fast-exit").read_text())
    finished = {
        e["agent"]: parse_at(e["at"])
        for e in tmux_repo.events("main")
        if e["event"] == "agent_finished"
    }
    assert finished["FAST"] - exited < 1.0, "FAST's finish waited on BIG's log being read"
    assert metrics(tmux_repo)["BIG"]["input_tokens"] == 11


def test_usage_is_read_line_by_line_whatever_the_lines(tmp_path: Path) -> None:
    log = tmp_path / "output.log"
    with log.open("w") as fh:
        fh.write("x" * (6 * 1024 * 1024) + "\n")  # a line longer than any usage report: skipped
        fh.write('{"type":"result","total_cost_usd":0.1,"usage":{"input_tokens":1,\n')  # torn
        fh.write(RESULT + "\n")
        fh.write("no newline at the end")
    started = time.monotonic()
    usage = read_usage_file("claude", {"output_format": "stream-json"}, log)
    assert (usage.input_tokens, usage.output_tokens, usage.cost_usd) == (11, 7, 0.5)
    assert time.monotonic() - started < 5


def test_markers_are_read_from_a_bounded_tail_of_the_last_try(tmp_path: Path) -> None:
    paths = StateLayout(tmp_path / "state", "main").agent(1, "A1")
    paths.dir.mkdir(parents=True)
    earlier = b"an earlier try\n" * 10
    with paths.output_log.open("wb") as fh:
        fh.write(earlier)
        fh.write(b"y" * 99 + b"\n")
        fh.write(b"z" * 100 * 1024 * 1024)  # 100 MB on one line (the line is cut: not kept)
        fh.write(b"\n[wave-gate] pass\n")
    paths.status.write_text(json.dumps({"attempt": 1, "code": 0, "output_offset": len(earlier)}))
    text = last_try_output(paths)
    assert len(text) <= MARKER_TAIL_BYTES
    assert text == "[wave-gate] pass\n", "the tail began in the middle of a line"


def peak_bytes(action: Callable[[], object]) -> tuple[object, int]:
    tracemalloc.start()
    try:
        value = action()
        return value, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_reading_a_50_mb_log_or_report_holds_little_memory(tmp_path: Path) -> None:
    log = tmp_path / "output.log"
    with log.open("w") as fh:
        for _ in range(50):
            fh.write((EVENT + "\n") * 8000 + "y" * 200_000 + "\n")
        fh.write(RESULT + "\n")
    assert log.stat().st_size > 50_000_000
    settings = {"output_format": "stream-json"}
    usage, peak = peak_bytes(lambda: read_usage_file("claude", settings, log))
    assert (usage.input_tokens, usage.output_tokens, usage.cost_usd) == (11, 7, 0.5)
    assert peak < 16 * 1024 * 1024, f"reading usage took {peak // 2**20} MB"
    report = tmp_path / "report.md"
    with report.open("w") as fh:
        fh.write(("z" * 1_000_000 + "\n") * 50)
        fh.write("Verdict: **pass**\n")
    verdict, peak = peak_bytes(lambda: report_verdict(report))
    assert verdict == "pass"
    assert peak < 4 * 1024 * 1024, f"reading the report took {peak // 2**20} MB"
