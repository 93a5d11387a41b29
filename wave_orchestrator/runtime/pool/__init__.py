"""The main loop: a set of agents launched, watched and waited on (``loop.AgentPool``, given a
``context.PoolContext`` and ``PoolHooks``), and the services only the loop drives: what it
notices of running agents (liveness), which pending agents start (launching) in bursts off the
loop, git jobs, the governor's side, rate-limit backoff, rerun requests, file events, the
heartbeat line.

May import: ``runtime.agent`` and every room below the runtime.
"""
