"""One wave, attempt by attempt: ``runner`` (start or rejoin, the attempt loop, the end),
``stage`` (the runs a stage hands to the pool: new, adopted, reused, on a fallback),
``judging`` (one attempt's gates and the component matrix), ``context`` (what the launcher
shares with a wave), and the files a wave writes for people and tools (summaries,
dashboard.json, metrics, the desk's hand-overs, the workspaces).

Four words that sound alike, and what each one is:

- ``retry``: the same launch, after a gate failed: which agents the next attempt runs
  again, and the reason each is told.
- ``reuse``: a new launch of a wave that ran before: an agent whose finished work still
  holds (by fingerprint and the launcher's ledger) is kept, not run again.
- ``resume``: ``wave launch --resume`` after a launcher died: its agents adopted, still
  running or finished, instead of started over.
- rerun: a person's ``wave rerun``; while a launcher runs, its requests are taken by the
  pool (``runtime.pool.reruns``, files in ``state.reruns``).

May import: ``runtime.pool``, ``runtime.agent`` and every room below the runtime.
"""
