"""One wave, attempt by attempt: ``runner`` (start or rejoin, the attempt loop, the end),
``stage`` (the runs a stage hands to the pool: new, adopted, reused, on a fallback),
``judging`` (one attempt's gates and the component matrix), ``context`` (what the launcher
shares with a wave), what a retry reruns (``retry``), finished work kept (``reuse``), a dead
launcher's agents adopted (``resume``), and the files a wave writes for people and tools
(summaries, dashboard.json, metrics, the desk's hand-overs, the workspaces).

May import: ``runtime.pool``, ``runtime.agent`` and every room below the runtime.
"""
