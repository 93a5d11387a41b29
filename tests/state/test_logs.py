"""The launcher's logging set-up: what it loads (start-up speed) and what it leaves loadable."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

SCRIPT = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from wave_orchestrator.state.logs import configure_logging, get_logger
    configure_logging(Path(sys.argv[1]), quiet=True)
    get_logger(lane="main").info("wave started", agents=3)
    loaded = sorted(n for n in ("rich", "ssl", "colorama", "better_exceptions") if n in sys.modules)
    import ssl  # hidden only while structlog loaded: whoever wants it later gets it
    print(json.dumps({"loaded": loaded, "ssl": ssl.OPENSSL_VERSION}))
    """
)


def test_logging_loads_neither_rich_nor_ssl_and_leaves_them_importable(tmp_path: Path) -> None:
    log = tmp_path / "launcher.log"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(log)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert '"loaded": []' in done.stdout and "OpenSSL" in done.stdout, done.stdout
    assert '"event": "wave started"' in log.read_text()


SECRET_SCRIPT = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from wave_orchestrator.state.logs import configure_logging, get_logger
    configure_logging(Path(sys.argv[1]))
    get_logger(lane="main").warning(
        "notify webhook not reached https://user:s3cret-pw@example.com/hook",
        error="token ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
        agent="A1",
    )
    """
)


def test_credentials_are_hidden_by_value_in_the_log_and_on_the_terminal(tmp_path: Path) -> None:
    log = tmp_path / "launcher.log"
    done = subprocess.run(
        [sys.executable, "-c", SECRET_SCRIPT, str(log)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    for text in (log.read_text(), done.stderr):
        assert "s3cret-pw" not in text and "A1b2C3d4E5f6" not in text, text
        assert "https://user:***@example.com/hook" in text and "agent" in text


MODULE_LOGGER_SCRIPT = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from wave_orchestrator.state.logs import Logger, bind_wave, configure_logging
    log = Logger("wave_orchestrator.runtime.pool.loop")
    assert "structlog" not in sys.modules, "a module's logger loaded structlog at import"
    configure_logging(Path(sys.argv[1]))
    bind_wave(3)
    log.info("agent launched", agent="A")
    log.at("warning", "agent finished", agent="A", status="failed")
    """
)


def test_a_module_logger_loads_structlog_late_and_carries_the_bound_wave(tmp_path: Path) -> None:
    """Read-only commands import modules that log: structlog loads at the first line only.
    The wave bound through contextvars and the module's name reach the JSON log; the
    terminal gets the short line without the module's name."""
    log = tmp_path / "launcher.log"
    done = subprocess.run(
        [sys.executable, "-c", MODULE_LOGGER_SCRIPT, str(log)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["event"], r["wave"], r["logger"]) for r in lines] == [
        ("agent launched", 3, "runtime.pool.loop"),
        ("agent finished", 3, "runtime.pool.loop"),
    ]
    assert lines[1]["level"] == "warning"
    assert "wave: warning: agent finished (agent=A status=failed wave=3)" in done.stderr
    assert "runtime.pool.loop" not in done.stderr


def test_a_module_logger_is_seen_by_capture_logs() -> None:
    from structlog.testing import capture_logs

    from wave_orchestrator.state.logs import Logger

    with capture_logs() as captured:
        Logger("wave_orchestrator.runtime.wave.runner").warning("gate failed", gate="qa")
    assert captured == [
        {
            "event": "gate failed",
            "gate": "qa",
            "logger": "runtime.wave.runner",
            "log_level": "warning",
        }
    ]
    with __import__("pytest").raises(ValueError):
        Logger("x").at("loud", "nothing")


WORKER_SCRIPT = textwrap.dedent(
    """
    import sys, threading
    from pathlib import Path
    import structlog
    from wave_orchestrator.runtime.pool.git_jobs import GitJobs
    from wave_orchestrator.state.logs import Logger, bind_wave, configure_logging, in_context
    log = Logger("wave_orchestrator.runtime.wave.workspaces")
    configure_logging(Path(sys.argv[1]), quiet=True)
    structlog.contextvars.bind_contextvars(lane="main")
    bind_wave(2)
    bare = threading.Thread(target=lambda: log.info("bare thread"))
    bare.start(); bare.join()
    carried = threading.Thread(target=in_context(lambda: log.info("carried thread")))
    carried.start(); carried.join()
    jobs = GitJobs(order=lambda run: 0)
    jobs.submit("A", lambda: log.info("committed A's work") or "sha", "commit").result(10)
    for pool in jobs.executors.values():
        pool.shutdown()
    """
)


def test_worker_threads_log_with_the_lane_and_wave_of_who_gave_them_work(tmp_path: Path) -> None:
    """A commit made on a git worker (and any work handed over with ``in_context``) logs a
    line that names its lane and wave, as the launcher's own lines do; a thread started bare
    would not, which is why the workers are given the context."""
    log = tmp_path / "launcher.log"
    done = subprocess.run(
        [sys.executable, "-c", WORKER_SCRIPT, str(log)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    lines = {r["event"]: r for r in map(json.loads, log.read_text().splitlines())}
    assert "lane" not in lines["bare thread"] and "wave" not in lines["bare thread"]
    for event in ("carried thread", "committed A's work"):
        assert (lines[event]["lane"], lines[event]["wave"]) == ("main", 2), lines[event]
