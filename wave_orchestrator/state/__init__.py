"""The state directory and its files: ``layout`` is the one place that knows where everything
under ``.wave/<lane>/`` lives; ``fsutil`` is how files there are written (atomically) and read
(untrusted); the event log, run state, status files, agent logs and the agent lifecycle.

May import: ``names`` and ``errors`` only. Everything else builds on it.
"""
