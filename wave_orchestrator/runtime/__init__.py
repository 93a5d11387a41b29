"""Planning and running waves: the launcher's main loop, the wave runner (implementation then
closure), the agent pool that waits on status files, the watcher, the lane lock, ``wave stop``
control, resume after a crash, dry runs and the dashboard snapshot. Where agents run is
``placement``.

May import: every room below it (``metrics``, ``desk``, ``dashboard``, ``closure``, ``agents``,
``definitions``, ``state``). Only ``cli`` imports it.
"""
