"""One wave, attempt by attempt: the runner, the context a launch shares with it, the gates,
what a retry reruns, finished work reused, a dead launcher's agents adopted, and the files a
wave writes for people and tools (summaries, dashboard.json, metrics).

May import: ``runtime.pool``, ``runtime.agent`` and every room below the runtime.
"""
