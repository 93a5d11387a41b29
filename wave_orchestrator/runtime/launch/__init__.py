"""One launch of one lane, start to end: the launcher, which waves run, waits on other lanes,
the dry run, and control from outside (``--detach``, ``wave stop``).

May import: ``runtime.wave``, ``runtime.pool``, ``runtime.agent`` and every room below the
runtime.
"""
