"""Running a lane: four folders, one per scope, each driving the next.

- ``launch/``: one launch of one lane, start to end (the lock, the placement, the governor, the
  waves in order), the dry run, and control from outside (``--detach``, ``wave stop``).
- ``wave/``: one wave, attempt by attempt: the runs each stage hands to the pool, the gates
  that judge an attempt, what the next attempt reruns, reuses or adopts, and the files a wave
  writes (summaries, dashboard.json, metrics).
- ``pool/``: the main loop: a set of agents launched, watched and waited on, with the services
  only the loop drives (bursts, git jobs, the governor's side, rate limits, reruns, file events).
- ``agent/``: one attempt of one agent: its plan (prompt, argv, environment) and its run.

May import: every room below it (``metrics``, ``desk``, ``dashboard``, ``coordination``,
``worktrees``, ``governor``, ``notify``, ``placement``, ``closure``, ``agents``,
``definitions``, ``state``). Only ``cli`` imports it. Inside, a folder imports only the
folders after it in the list above.
"""
