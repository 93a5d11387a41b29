"""The state directory and its files: ``layout`` is the one place that knows where everything
under ``.wave/<lane>/`` lives; ``fsutil`` is how files there are written (atomically) and read
(untrusted), ``jsonl`` how append-only JSON lines are, ``owned_trees`` how a tree wave made is
pruned or removed (and no other); ``trees`` copies an agent's folder (iterative, bounded, plain
files only); the
event log, run state, status files, agent logs and the agent lifecycle; ``ledger``, outside the
repository, is the launcher's own record that decisions are taken from; ``lock``, the lane
lock and who holds it.

May import: ``names`` and ``errors`` only. Everything else builds on it.
"""
