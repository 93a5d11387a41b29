"""Planning and running waves: the launcher, the wave runner (implementation then closure),
the agent pool whose loop waits on status files, the watcher, ``wave stop`` control, resume
after a crash, dry runs and the dashboard snapshot. Where agents run is the ``placement`` room
below it.

May import: every room below it (``metrics``, ``desk``, ``dashboard``, ``placement``,
``closure``, ``agents``, ``definitions``, ``state``). Only ``cli`` imports it.
"""
