"""The main loop: a set of agents launched, watched and waited on, and the services only the
loop drives (bursts of sessions off the loop, git jobs, the governor's side, rate-limit
backoff, rerun requests, file events, the heartbeat line).

May import: ``runtime.agent`` and every room below the runtime.
"""
